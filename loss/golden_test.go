package loss

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/golden"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// goldenAdapter is a LoRA on every projection, addressed by HF module name.
type goldenAdapter map[string]*model.LoRA

func (g goldenAdapter) LoRA(layer int, p model.Proj) *model.LoRA {
	return g[fmt.Sprintf("model.layers.%d.%s", layer, p.Module())]
}

// nmse is Σ(got−want)² / Σwant².
func nmse(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	return num / den
}

// TestPolicyGradientMatchesPyTorch checks, for every loss_type (and the KL
// penalty, clip-higher, env-token masking and mask_truncated), that the
// batch loss matches autograd's to 1e-5 relative and every LoRA gradient
// tensor to NMSE ≤ 1e-6.
func TestPolicyGradientMatchesPyTorch(t *testing.T) {
	// Written by testdata/reference/grpo_loss.py: PyTorch autograd in
	// float64 over the same tiny models, adapters and rollouts.
	var g golden.LossFile
	vals, err := golden.Read(filepath.Join("..", "testdata"), "grpo_loss.json", &g)
	if err != nil {
		t.Fatal(err)
	}
	slice := func(a golden.Array) []float32 {
		v, err := a.Of(vals)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, gm := range g.Models {
		be := cpu.New()
		base, err := model.Load(filepath.Join("..", "testdata", "models", gm.Model), be)
		if err != nil {
			t.Fatal(err)
		}
		ad := goldenAdapter{}
		for _, l := range gm.LoRA {
			a, b := slice(l.A), slice(l.B)
			lr := &model.LoRA{Rank: g.Rank, Scale: g.Scale,
				A: be.Alloc(kernels.F32, len(a)), B: be.Alloc(kernels.F32, len(b)),
				DA: be.Alloc(kernels.F32, len(a)), DB: be.Alloc(kernels.F32, len(b))}
			be.Upload(lr.A, a)
			be.Upload(lr.B, b)
			ad[l.Module] = lr
		}
		policy := base.WithAdapter(ad)
		var samples []Sample
		for _, s := range gm.Samples {
			samples = append(samples, Sample{Prompt: s.Prompt, Completion: s.Completion, ModelMask: s.ModelMask,
				OldLogp: s.OldLogp, Advantage: s.Advantage, Truncated: s.Truncated})
		}
		t.Run(gm.Model+"/zero-advantage", func(t *testing.T) {
			zero := append([]Sample(nil), samples...)
			for i := range zero {
				zero[i].Advantage = 0
			}
			for _, lr := range ad {
				be.Fill(lr.DA, 0, lr.DA.Len())
				be.Fill(lr.DB, 0, lr.DB.Len())
			}
			if _, err := PolicyGradient(policy, zero, DefaultConfig(), g.MaxTokens, 1<<20); err != nil {
				t.Fatal(err)
			}
			for name, lr := range ad {
				for _, buf := range []kernels.Buffer{lr.DA, lr.DB} {
					got := make([]float32, buf.Len())
					be.Download(got, buf)
					for _, v := range got {
						if v != 0 {
							t.Fatalf("%s: gradient %v from a zero-advantage batch", name, v)
						}
					}
				}
			}
		})
		for _, gc := range gm.Cases {
			t.Run(gm.Model+"/"+gc.Name, func(t *testing.T) {
				for _, lr := range ad {
					be.Fill(lr.DA, 0, lr.DA.Len())
					be.Fill(lr.DB, 0, lr.DB.Len())
				}
				eh := gc.EpsilonHigh
				cfg := Config{Type: gc.LossType, Epsilon: gc.Epsilon, EpsilonHigh: &eh, Beta: gc.Beta, MaskTruncated: gc.MaskTruncated}
				// A small micro-batch budget exercises gradient accumulation.
				st, err := PolicyGradient(policy, samples, cfg, g.MaxTokens, 16)
				if err != nil {
					t.Fatal(err)
				}
				if rel := math.Abs(st.Loss-gc.Loss) / math.Abs(gc.Loss); rel > 1e-5 {
					t.Errorf("loss %.9g, want %.9g (rel err %.2g)", st.Loss, gc.Loss, rel)
				}
				if st.Tokens != gc.TrainedTokens {
					t.Errorf("trained tokens %d, want %d", st.Tokens, gc.TrainedTokens)
				}
				wantKL := gc.KLMean
				if gc.Beta == 0 {
					wantKL = 0 // the reference forward runs only when the KL term is on
				}
				if math.Abs(st.Entropy-gc.EntropyMean) > 1e-5 || math.Abs(st.KL-wantKL) > 1e-6 {
					t.Errorf("entropy %.7g kl %.7g, want %.7g %.7g", st.Entropy, st.KL, gc.EntropyMean, wantKL)
				}
				worst, where := 0.0, ""
				for _, gg := range gc.Grads {
					lr := ad[gg.Module]
					for _, pair := range []struct {
						name string
						buf  kernels.Buffer
						want golden.Array
					}{{"A", lr.DA, gg.A}, {"B", lr.DB, gg.B}} {
						got := make([]float32, pair.buf.Len())
						be.Download(got, pair.buf)
						if e := nmse(got, slice(pair.want)); e > worst || math.IsNaN(e) {
							worst, where = e, gg.Module+"."+pair.name
						}
					}
				}
				if worst > 1e-6 || math.IsNaN(worst) {
					t.Errorf("worst gradient NMSE %.3g at %s > 1e-6", worst, where)
				} else {
					t.Logf("loss rel err %.2g; worst gradient NMSE %.2g (%s)", math.Abs(st.Loss-gc.Loss)/math.Abs(gc.Loss), worst, strings.TrimPrefix(where, "model."))
				}
			})
		}
	}
}
