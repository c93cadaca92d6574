package bench

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// timingEvents is an emulated device that counts the timing events made
// on it: a bench without --profile must make none.
type timingEvents struct {
	*emu.Device
	n int
}

func (d *timingEvents) NewTimingEvent() (cuda.Event, error) {
	d.n++
	return d.Device.NewTimingEvent()
}

var tinyProfileShape = model.Config{ModelType: "qwen3", HiddenSize: 16, IntermediateSize: 32, NumLayers: 2,
	NumHeads: 2, NumKVHeads: 1, HeadDim: 8, VocabSize: 96, RMSNormEps: 1e-6, RopeTheta: 1e6,
	MaxPositions: 64, TieWordEmbeddings: true, HiddenAct: "silu"}

// TestBenchProfileOnEmu runs grpo bench's figures with and without a
// kernel profile through the CUDA backend under emu. With it, there is a
// profile of one prefill, one decode step replayed and op by op, and one
// train micro-batch, in that order; in each, every entry is a kernel the
// PTX has (or a GEMM shape, memset, copy, graph) and the entries'
// launches are the profiled run's Counts, kind by kind; that run's
// counts are the timed runs' (the same work; the events bypass the
// Counter); the replayed graph's kernel count is the op-by-op step's
// kernels and GEMMs; kernel time ≤ GPU span ≤ wall. Without it, no timing
// event is made and the counts are the same.
func TestBenchProfileOnEmu(t *testing.T) {
	o := Options{Prefill: 8, Decode: 3, Batch: 2, Repeat: 1, PrefillChunk: 64, Temperature: 1,
		TrainSeqs: 2, TrainLen: 8, LoRARank: 4, NoMatmul: true}
	run := func(profile bool) (*Results, int) {
		dev := &timingEvents{Device: emu.NewDevice()}
		cfg := tinyProfileShape
		m, err := RandomModel(&cfg, cuda.New(dev), "auto")
		if err != nil {
			t.Fatal(err)
		}
		defer m.Free()
		o.Profile = profile
		res, err := Run(m, o)
		if err != nil {
			t.Fatal(err)
		}
		return res, dev.n
	}
	plain, events := run(false)
	if events != 0 || len(plain.Profiles) != 0 {
		t.Errorf("without --profile: %d timing events, %d profiles; want none", events, len(plain.Profiles))
	}
	res, events := run(true)
	if events == 0 {
		t.Error("with --profile: no timing event made")
	}
	phases := []string{"prefill 2x8", "decode step batch 2 (graph replay)", "decode step batch 2 (op by op)", "train micro-batch 2x8"}
	if len(res.Profiles) != len(phases) {
		t.Fatalf("%d profiles, want %v", len(res.Profiles), phases)
	}
	for i, p := range res.Profiles {
		if p.Phase != phases[i] {
			t.Errorf("profile %d is %q, want %q", i, p.Phase, phases[i])
		}
		checkPhaseProfile(t, p)
	}
	// The profiled decode step is the second after a Load, the figure's
	// the last: attention's FLOPs grow with the position. The profiled
	// micro-batch ends with a Sync, the timed ones do not.
	decodeStep, micro := *res.Counts.DecodeStep, *res.Counts.TrainMicroBatch
	decodeStep.FLOPs = res.Profiles[1].Counts.FLOPs
	micro.Syncs++
	for _, c := range []struct {
		name              string
		profiled, figures *cuda.Counts
	}{
		{"prefill", res.Profiles[0].Counts, res.Counts.Prefill},
		{"decode step", res.Profiles[1].Counts, &decodeStep},
		{"train micro-batch", res.Profiles[3].Counts, &micro},
		{"prefill without --profile", plain.Counts.Prefill, res.Counts.Prefill},
		{"decode step without --profile", plain.Counts.DecodeStep, res.Counts.DecodeStep},
		{"train micro-batch without --profile", plain.Counts.TrainMicroBatch, res.Counts.TrainMicroBatch},
	} {
		if *c.profiled != *c.figures {
			t.Errorf("%s: counts %v, the figure's %v; want the same work", c.name, c.profiled, c.figures)
		}
	}
	graph, eager := res.Profiles[1], res.Profiles[2]
	want := fmt.Sprintf("graph (%d kernels)", eager.Counts.Launches+eager.Counts.GEMMs)
	if len(graph.Kernels) == 0 || graph.Kernels[0].Name != want || graph.Counts.GraphLaunches != 1 {
		t.Errorf("graph replay's profile %+v: want %q first (the op-by-op step's kernels and GEMMs)", graph.Kernels, want)
	}
	if eager.Counts.GraphLaunches != 0 || eager.Counts.Launches == 0 {
		t.Errorf("op-by-op step: %v; want kernels launched one by one", eager.Counts)
	}
}

// checkPhaseProfile checks one phase's entries against its Counts.
func checkPhaseProfile(t *testing.T, p PhaseProfile) {
	t.Helper()
	byKind := map[string]int64{}
	var graphKernels int64
	for _, e := range p.Kernels {
		switch {
		case strings.HasPrefix(e.Name, "gemm bf16 "), strings.HasPrefix(e.Name, "sgemm "):
			byKind["gemm"] += e.Launches
		case e.Name == "memset", e.Name == "copy HtoD", e.Name == "copy DtoH":
			byKind[e.Name] += e.Launches
		case e.Name == "copy DtoD": // timed, not counted (cuda.Counts has no field)
		case strings.HasPrefix(e.Name, "graph ("):
			byKind["graph"] += e.Launches
			var n int64
			if _, err := fmt.Sscanf(e.Name, "graph (%d kernels)", &n); err != nil {
				t.Errorf("%s: entry %q: %v", p.Phase, e.Name, err)
			}
			graphKernels += n * e.Launches
		default:
			if _, ok := cuda.Figures(e.Name); !ok {
				t.Errorf("%s: entry %q is not a kernel of the PTX", p.Phase, e.Name)
			}
			byKind["kernel"] += e.Launches
		}
	}
	c := p.Counts
	want := map[string]int64{"kernel": c.Launches, "gemm": c.GEMMs, "memset": c.Memsets, "copy HtoD": c.HtoD, "copy DtoH": c.DtoH, "graph": c.GraphLaunches}
	for k, n := range want {
		if byKind[k] != n {
			t.Errorf("%s: %d %s entries' launches, %d counted", p.Phase, byKind[k], k, n)
		}
	}
	if graphKernels != c.GraphKernels {
		t.Errorf("%s: graphs of %d kernels profiled, %d counted", p.Phase, graphKernels, c.GraphKernels)
	}
	if !(p.KernelMs > 0 && p.KernelMs <= p.SpanMs && p.SpanMs <= p.WallMs) {
		t.Errorf("%s: kernels %v ms, span %v ms, wall %v ms: want 0 < kernels ≤ span ≤ wall", p.Phase, p.KernelMs, p.SpanMs, p.WallMs)
	}
	t.Logf("%s: wall %.2f ms, span %.2f ms, kernels %.2f ms in %d ops (%d kinds)", p.Phase, p.WallMs, p.SpanMs, p.KernelMs, p.Launches(), len(p.Kernels))
}

// TestBenchProfileOnCPU: the cpu backend launches no kernels; a profile
// there is one clear error.
func TestBenchProfileOnCPU(t *testing.T) {
	m := randomModel(t, tinyProfileShape, "cpu")
	_, err := Run(m, Options{Prefill: 4, Batch: 1, Repeat: 1, PrefillChunk: 64, NoMatmul: true, Profile: true})
	if !errors.Is(err, errNoProfile) {
		t.Errorf("--profile on cpu: %v, want %v", err, errNoProfile)
	}
}

// TestStepBenchProfileOnEmu: --grpo-step --profile adds one more step's
// generate and train profiles, each checked against its Counts as the
// figures' are; the decode steps inside generate are graph replays.
func TestStepBenchProfileOnEmu(t *testing.T) {
	m := randomModel(t, tinyProfileShape, "emu")
	res, err := Run(m, Options{Prefill: 1, Batch: 1, Repeat: 1, PrefillChunk: 64, LoRARank: 4, Profile: true,
		Step: StepOptions{Enabled: true, Prompts: 1, Rollouts: 2, PromptLen: 4, NewTokens: 4, MicroBatch: 8192}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Profiles) != 2 || res.Profiles[0].Phase != "grpo step: generate" || res.Profiles[1].Phase != "grpo step: train" {
		t.Fatalf("profiles %+v: want the step's generate and train", res.Profiles)
	}
	for _, p := range res.Profiles {
		checkPhaseProfile(t, p)
	}
	if c := res.Profiles[0].Counts; c.GraphLaunches == 0 {
		t.Errorf("generate: %v; want its decode steps replayed", c)
	}
}
