package estimate

import (
	"errors"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// reportingBackend is the CPU backend posing as a device that reports its
// memory (as cuda and emu do), and counting Close.
type reportingBackend struct {
	*cpu.Backend
	free, total int64
	err         error
	closed      *int
}

func (r reportingBackend) MemInfo() (int64, int64, error) { return r.free, r.total, r.err }
func (r reportingBackend) Close() error                   { *r.closed++; return nil }

var memTestClosed int

func init() {
	kernels.Register("memtest-reports", func() (kernels.Backend, error) {
		return reportingBackend{Backend: cpu.New(), free: 3 << 30, total: 8 << 30, closed: &memTestClosed}, nil
	})
	kernels.Register("memtest-fails", func() (kernels.Backend, error) {
		return reportingBackend{Backend: cpu.New(), err: errors.New("cuMemGetInfo: context lost"), closed: &memTestClosed}, nil
	})
	kernels.Register("memtest-silent", func() (kernels.Backend, error) { return cpu.New(), nil })
}

// TestAvailableMemoryFromBackend: a non-cpu device's free memory comes from
// its backend's kernels.MemoryReporter, so grpo train refuses a run on cuda
// that does not fit as it does on cpu; a backend that cannot say, or fails
// to, leaves it unknown with the reason, and the backend is closed again.
func TestAvailableMemoryFromBackend(t *testing.T) {
	t.Setenv(FakeMemAvailableEnv, "")
	before := memTestClosed
	av, err := AvailableMemory("memtest-reports")
	if err != nil || !av.Known || av.Bytes != 3<<30 || !strings.Contains(av.Source, "of 8.0 GiB in all") {
		t.Errorf("reporting backend: %+v, %v", av, err)
	}
	if memTestClosed != before+1 {
		t.Errorf("the backend opened for the question was closed %d times, want 1", memTestClosed-before)
	}
	e := &Estimate{Peak: 4 << 30, PeakPhase: PhaseSampling, Available: &av}
	if fits, ok := e.Fits(); !ok || fits {
		t.Errorf("4 GiB peak on 3 GiB free: fits %v, known %v", fits, ok)
	}
	for dev, want := range map[string]string{
		"memtest-fails":  "context lost",
		"memtest-silent": "cannot report free memory",
		"no-such-device": "not available in this build",
	} {
		av, err := AvailableMemory(dev)
		if err != nil || av.Known || !strings.Contains(av.Source, want) {
			t.Errorf("%s: %+v, %v; want unknown, source containing %q", dev, av, err, want)
		}
	}
}
