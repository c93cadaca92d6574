package estimate

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model"
)

// TestKeepSampler: the sampler is kept exactly when resident + training +
// the largest KV plan's pool and decode workspaces fit in the free memory
// less the KV plan's headroom; the sampling phase's activations do not
// count; unknown memory keeps it.
func TestKeepSampler(t *testing.T) {
	e := &Estimate{}
	e.add(PhaseResident, "base weights", 1000, "")
	e.add(PhaseSampling, "forward activations", 9000, "") // transient: not counted
	e.add(PhaseTraining, "activations", 5000, "")
	// Two plans: sampling's pool of 2 blocks of 1000 B (+ a 4-entry
	// table) and eval's larger one of 3 blocks (+ 4 entries), whose
	// decode workspaces are 500 B.
	e.KV = []KVPlan{
		{Phase: PhaseSampling, Rollouts: 1, MaxLen: 64, BlockSize: 16, BlockBytes: 1000, Blocks: 2, DecodeBytes: 400},
		{Phase: PhaseEval, Rollouts: 1, MaxLen: 64, BlockSize: 16, BlockBytes: 1000, Blocks: 3, DecodeBytes: 500},
	}
	const need = 1000 + 5000 + 3000 + 16 + 500
	headroom := kvHeadroom
	fits := int64(float64(need)/(1-headroom)) + 1
	for _, c := range []struct {
		av   *Available
		keep bool
		why  string
	}{
		{nil, true, "free memory unknown"},
		{&Available{Bytes: 1 << 40}, true, "free memory unknown"},
		{&Available{Bytes: fits, Known: true}, true, "kept across steps: resident 1000 B + training 4.9 KiB + the sampler's KV pool 2.9 KiB and decode workspaces 500 B"},
		{&Available{Bytes: fits - 2, Known: true}, false, "freed before each policy update"},
		{&Available{Bytes: need, Known: true}, false, "exceed"},
	} {
		k := e.KeepSampler(c.av)
		if k.Keep != c.keep || k.Bytes != need || !strings.Contains(k.Why, c.why) {
			t.Errorf("available %+v: %+v; want keep %v, %d bytes, a line with %q", c.av, k, c.keep, need, c.why)
		}
	}
}

// TestKVPlanDecodeBytes: a plan's decode workspaces are its padded
// buckets' rows (1, 2, 4, 8 and the 12 rollouts: 27) at the sampling
// phase's bytes per row, so they grow with the rollouts and the
// vocabulary.
func TestKVPlanDecodeBytes(t *testing.T) {
	mc := &model.Config{ModelType: "qwen3", HiddenSize: 64, IntermediateSize: 128, NumLayers: 2, NumHeads: 4,
		NumKVHeads: 2, HeadDim: 16, VocabSize: 1000, MaxPositions: 4096}
	cfg := estimateConfig(12, 4, 32)
	plan := func(vocab int) KVPlan {
		c := *mc
		c.VocabSize = vocab
		e, err := Memory(cfg, &c, Options{Device: "cpu"})
		if err != nil {
			t.Fatal(err)
		}
		return e.KV[0]
	}
	small, large := plan(1000), plan(2000)
	// 27 rows; each row's logits are 4 B per vocabulary entry.
	if got := large.DecodeBytes - small.DecodeBytes; got != 27*1000*4 {
		t.Errorf("decode workspaces grow by %d bytes with 1000 more vocabulary entries, want 27 rows × 4000 B = %d", got, 27*1000*4)
	}
	if small.Rollouts != 12 || small.DecodeBytes <= 0 {
		t.Errorf("plan: %d rollouts, %d decode bytes", small.Rollouts, small.DecodeBytes)
	}
}
