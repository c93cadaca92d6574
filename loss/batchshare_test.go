package loss

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// TestSharesSumToTheWholeBatch: under every loss type, the policy
// gradients of two shares of a batch (whole groups, as data-parallel
// devices take them), each normalised by the whole batch's counts
// (PolicyGradientOfShare), add up to the whole batch's gradient (NMSE ≤
// 1e-10) and their losses to its loss (1e-5 relative), KL penalty and
// a truncated sample (masked where mask_truncated is on) included. The
// shares normalised by their own counts (PolicyGradient on each) do not.
func TestSharesSumToTheWholeBatch(t *testing.T) {
	be := cpu.New()
	base, err := model.Load("../testdata/models/qwen3-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ad := goldenAdapter{}
	var grads []kernels.Buffer
	for l := range base.Config.NumLayers {
		for _, p := range []model.Proj{model.ProjQ, model.ProjDown} {
			in, out := base.Config.Dims(p)
			lr := &model.LoRA{Rank: 2, Scale: 2, A: be.Alloc(kernels.F32, 2*in), B: be.Alloc(kernels.F32, out*2),
				DA: be.Alloc(kernels.F32, 2*in), DB: be.Alloc(kernels.F32, out*2)}
			for _, buf := range []kernels.Buffer{lr.A, lr.B} {
				v := make([]float32, buf.Len())
				for i := range v {
					v[i] = float32(rng.NormFloat64() * 0.1)
				}
				be.Upload(buf, v)
			}
			ad[fmt.Sprintf("model.layers.%d.%s", l, p.Module())] = lr
			grads = append(grads, lr.DA, lr.DB)
		}
	}
	policy := base.WithAdapter(ad)
	var samples []Sample
	for range 3 {
		prompt := make([]int32, 3+rng.IntN(5))
		for i := range prompt {
			prompt[i] = int32(rng.IntN(base.Config.VocabSize))
		}
		for range 4 {
			s := Sample{Prompt: prompt, Completion: make([]int32, 2+rng.IntN(6)), Advantage: float32(rng.NormFloat64())}
			s.OldLogp = make([]float32, len(s.Completion))
			for j := range s.Completion {
				s.Completion[j] = int32(rng.IntN(base.Config.VocabSize))
				s.OldLogp[j] = -6 + float32(rng.NormFloat64()*0.3)
			}
			samples = append(samples, s)
		}
	}
	samples[5].Truncated = true
	read := func() [][]float32 {
		var out [][]float32
		for _, g := range grads {
			v := make([]float32, g.Len())
			be.Download(v, g)
			out = append(out, v)
			be.Fill(g, 0, g.Len())
		}
		return out
	}
	read() // zero
	shares := [][]Sample{samples[:8], samples[8:]}
	for _, typ := range []string{"dapo", "grpo", "dr_grpo", "cispo", "dppo"} {
		cfg := DefaultConfig()
		cfg.Type, cfg.Beta, cfg.MaskTruncated = typ, 0.05, typ == "dapo"
		if typ == "cispo" {
			eh := 5.0
			cfg.EpsilonHigh = &eh
		}
		whole, err := PolicyGradient(policy, samples, cfg, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		want := read()
		counts := CountBatch(samples, cfg)
		var sum Stats
		for _, sh := range shares {
			st, err := PolicyGradientOfShare(policy, sh, counts, cfg, 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			sum.Loss += st.Loss
			sum.Tokens += st.Tokens
		}
		got := read()
		if sum.Tokens != whole.Tokens || rel(sum.Loss, whole.Loss) > 1e-5 {
			t.Errorf("%s: shares' loss %.9g over %d tokens, the whole batch's %.9g over %d", typ, sum.Loss, sum.Tokens, whole.Loss, whole.Tokens)
		}
		worst := 0.0
		for i := range want {
			worst = max(worst, nmse(got[i], want[i]))
		}
		if worst > 1e-10 {
			t.Errorf("%s: shares' gradients sum to NMSE %.3g of the whole batch's", typ, worst)
		}
		for _, sh := range shares {
			if _, err := PolicyGradient(policy, sh, cfg, 16, 64); err != nil {
				t.Fatal(err)
			}
		}
		local := read()
		worst = 0
		for i := range want {
			worst = max(worst, nmse(local[i], want[i]))
		}
		if worst < 1e-3 {
			t.Errorf("%s: shares normalised by their own counts sum to NMSE %.3g of the whole batch's: the check cannot tell", typ, worst)
		}
	}
}
