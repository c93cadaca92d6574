package bench

import (
	"errors"
	"time"

	"github.com/grpo-dev/grpo/estimate/perf"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
)

// PhaseProfile is a kernel profile (cuda.Profile) of one unit of a
// figure's work — one prefill, one decode step, one train micro-batch,
// a GRPO step's generate or train — run once more after the figure's
// timed runs, so the events' cost (two records per op) is in no figure.
// WallMs is the host clock from opening the profile to the unit's end
// (each unit ends waiting for the device); WallMs − SpanMs is host time
// outside the GPU's span: before the profile's start mark reached the
// GPU and after the last op ended (the unit's host work after it, such
// as reading a download); SpanMs − KernelMs is the GPU idle between ops
// (launch gaps, host work between launches, host waits).
type PhaseProfile struct {
	Phase  string  `json:"phase"`
	WallMs float64 `json:"wall_ms"`
	cuda.Profile
	Note string `json:"note,omitempty"`
	// Counts are what the profiled run asked of the device (the
	// profile's events are not in them): its kernel entries' launches
	// sum to Launches, its GEMM entries' to GEMMs.
	Counts *cuda.Counts `json:"counts"`
}

// errNoProfile is --profile on a backend that runs no kernels.
var errNoProfile = errors.New("bench: a kernel profile needs the cuda backend (on a GPU or emu): the cpu backend launches no kernels")

// profilePhase runs f, which must end waiting for the device, under a
// kernel profile of be.
func profilePhase(be kernels.Backend, phase, note string, f func() error) (PhaseProfile, error) {
	cb := perf.Counter(be)
	if cb == nil {
		return PhaseProfile{}, errNoProfile
	}
	if err := be.Sync(); err != nil { // an idle stream: span and wall start together
		return PhaseProfile{}, err
	}
	t0 := time.Now()
	if err := cb.StartProfile(); err != nil {
		return PhaseProfile{}, err
	}
	c, err := perf.Measure(be, f)
	wall := time.Since(t0)
	p, perr := cb.StopProfile()
	if err = errors.Join(err, perr); err != nil {
		return PhaseProfile{}, err
	}
	return PhaseProfile{Phase: phase, WallMs: float64(wall.Nanoseconds()) / 1e6, Profile: p, Note: note, Counts: c}, nil
}

// addProfile appends profilePhase's profile to *to.
func addProfile(to *[]PhaseProfile, be kernels.Backend, phase, note string, f func() error) error {
	p, err := profilePhase(be, phase, note, f)
	if err == nil {
		*to = append(*to, p)
	}
	return err
}
