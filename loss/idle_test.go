package loss

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// TestIdlePassesAddNothing: padding a share's passes with idle ones
// (PolicyGradientPadded) leaves its loss and gradients bit for bit as
// they were, KL term included, and a share with nothing to train still
// runs its idle passes and leaves the gradients zero. (That the idle
// passes run, exchanges and all, is trainer/replicas' expert-parallel
// test's: it counts their collectives.)
func TestIdlePassesAddNothing(t *testing.T) {
	be := cpu.New()
	base, err := model.Load("../testdata/models/qwen3-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ad := randomAdapter(base, rng)
	policy := base.WithAdapter(ad)
	var samples []Sample
	for range 2 {
		s := Sample{Prompt: []int32{5, 9, 11}, Completion: []int32{7, 3, 2}, OldLogp: []float32{-6, -6, -6}, Advantage: float32(rng.NormFloat64())}
		samples = append(samples, s)
	}
	cfg := DefaultConfig()
	cfg.Beta = 0.05
	grads := func() []float32 {
		var all []float32
		keys := slices.Sorted(maps.Keys(ad))
		for _, k := range keys {
			lr := ad[k]
			for _, buf := range []kernels.Buffer{lr.DA, lr.DB} {
				v := make([]float32, buf.Len())
				be.Download(v, buf)
				all = append(all, v...)
				be.Fill(buf, 0, buf.Len())
			}
		}
		return all
	}
	whole := CountBatch(samples, cfg)
	if n := Passes(policy, samples, whole, cfg, 8, 6); n != 2 {
		t.Fatalf("two samples of 6 tokens in passes of 6: %d passes, want 2", n)
	}
	want, err := PolicyGradientPadded(policy, samples, whole, cfg, 8, 6, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantGrads := grads()
	got, err := PolicyGradientPadded(policy, samples, whole, cfg, 8, 6, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got != want || !slices.Equal(grads(), wantGrads) {
		t.Errorf("padded to 5 passes: %+v and other gradients; unpadded: %+v", got, want)
	}
	for i := range samples {
		samples[i].ModelMask = make([]bool, len(samples[i].Completion)) // no token of the model's
	}
	st, err := PolicyGradientPadded(policy, samples, CountBatch(samples, cfg), cfg, 8, 6, 2)
	if err != nil || st.Tokens != 0 {
		t.Fatalf("nothing to train: %d tokens trained, %v", st.Tokens, err)
	}
	for i, g := range grads() {
		if g != 0 {
			t.Fatalf("nothing to train but gradient %d is %v after idle passes", i, g)
		}
	}
}
