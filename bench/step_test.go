package bench

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// tinyStepShape is a Qwen3 shape small enough for a test to take whole
// GRPO steps on the CPU in milliseconds.
var tinyStepShape = model.Config{ModelType: "qwen3", HiddenSize: 16, IntermediateSize: 32, NumLayers: 2,
	NumHeads: 2, NumKVHeads: 1, HeadDim: 8, VocabSize: 64, RMSNormEps: 1e-6, RopeTheta: 1e6,
	MaxPositions: 128, TieWordEmbeddings: true, HiddenAct: "silu"}

// TestStepBenchDoesTheWork checks that the --grpo-step bench measures a
// real GRPO step, not an empty one: every rollout generates exactly the
// asked-for tokens (no stop token ends one early, so both engines do the
// same work), each of them carries loss weight, the loss and gradient
// norm are finite and the gradient is not zero, and AdamW changes the
// adapter. No timing is checked (numbers come from benchmarks).
func TestStepBenchDoesTheWork(t *testing.T) {
	cfg := tinyStepShape
	m := model.NewRandom(&cfg, cpu.New(), 1)
	defer m.Free()
	o := StepOptions{Enabled: true, Prompts: 2, Rollouts: 3, PromptLen: 5, NewTokens: 7, MicroBatch: 8192}
	sb, err := newStepBench(m, 4, o)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.free()
	snapshot := func() []float32 {
		var all []float32
		for _, p := range sb.policy.Adapter.Params() {
			v := make([]float32, p.Value.Len())
			m.Backend.Download(v, p.Value)
			all = append(all, v...)
		}
		if err := m.Backend.Sync(); err != nil {
			t.Fatal(err)
		}
		return all
	}
	before := snapshot()
	for step := range 2 {
		r, err := sb.run(context.Background())
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		want := o.Prompts * o.Rollouts * o.NewTokens
		if r.GenTokens != want || r.TrainTokens != want {
			t.Errorf("step %d: generated %d and trained %d tokens, want %d each", step, r.GenTokens, r.TrainTokens, want)
		}
		if math.IsNaN(r.Loss) || math.IsInf(r.Loss, 0) || !(r.GradNorm > 0) || math.IsInf(r.GradNorm, 0) {
			t.Errorf("step %d: loss %v, grad norm %v: want finite, and a non-zero gradient", step, r.Loss, r.GradNorm)
		}
		if r.Generate <= 0 || r.Train <= 0 {
			t.Errorf("step %d: generate %v, train %v: a phase was not timed", step, r.Generate, r.Train)
		}
	}
	if slices.Equal(before, snapshot()) {
		t.Error("two steps left the adapter unchanged: the update measured nothing")
	}
}
