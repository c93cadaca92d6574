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

// nmse is Σ(got−want)² / Σwant² (Σgot² when want is all zeros).
func nmse(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	if den == 0 {
		return num // an expert no token was routed to: its gradient must be 0
	}
	return num / den
}

// TestPolicyGradientMatchesPyTorch checks, for every loss_type (and the KL
// penalty, clip-higher, env-token masking and mask_truncated), that the
// batch loss matches autograd's to 1e-5 relative and every LoRA gradient
// tensor to NMSE ≤ 1e-6.
func TestPolicyGradientMatchesPyTorch(t *testing.T) { checkLossGolden(t, "grpo_loss.json") }

// TestPolicyGradientFamilyMatchesPyTorch is the same check for the loss
// family beyond the PPO clip (GSPO, CISPO, prime-rl's DPPO+KL) and the
// behaviour corrections, through the whole backward into the adapter.
func TestPolicyGradientFamilyMatchesPyTorch(t *testing.T) {
	checkLossGolden(t, "grpo_loss_family.json")
}

// TestPolicyGradientMoEMatchesPyTorch is the same check on the Qwen3-MoE
// tiny models (norm_topk_prob on; off with a dense layer), with adapters on
// attention and on every expert's gate/up/down: each expert's gradient is
// held to NMSE ≤ 1e-6 on its own.
func TestPolicyGradientMoEMatchesPyTorch(t *testing.T) { checkLossGolden(t, "grpo_loss_moe.json") }

// expertModule parses "model.layers.L.mlp.experts.E.P" into its layer,
// expert and projection.
func expertModule(name string) (layer, expert int, p model.Proj, ok bool) {
	var proj string
	if n, _ := fmt.Sscanf(name, "model.layers.%d.mlp.experts.%d.%s", &layer, &expert, &proj); n != 3 {
		return 0, 0, 0, false
	}
	p, err := model.ParseProj(proj)
	return layer, expert, p, err == nil
}

// goldenExperts adds the stacked expert adapters to a goldenAdapter.
type goldenExperts struct {
	goldenAdapter
	experts map[[2]int]*model.ExpertLoRA // by (layer, proj)
}

func (g goldenExperts) ExpertLoRA(layer int, p model.Proj) *model.ExpertLoRA {
	return g.experts[[2]int{layer, int(p)}]
}

// RouterLoRA implements model.RouterAdapter: the router's adapter is the
// module "model.layers.L.mlp.gate".
func (g goldenExperts) RouterLoRA(layer int) *model.LoRA {
	return g.goldenAdapter[fmt.Sprintf("model.layers.%d.mlp.gate", layer)]
}

func checkLossGolden(t *testing.T, file string) {
	// Written by testdata/reference/grpo_loss.py: PyTorch autograd in
	// float64 over the same tiny models, adapters and rollouts.
	var g golden.LossFile
	vals, err := golden.Read(filepath.Join("..", "testdata"), file, &g)
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
		c := base.Config
		ad := goldenExperts{goldenAdapter{}, map[[2]int]*model.ExpertLoRA{}}
		var grads []kernels.Buffer // every DA and DB, to zero
		// gradOf returns a module's gradient buffers (views of the stacked
		// ones for an expert).
		gradOf := func(module string) (da, db kernels.Buffer) {
			if l, e, p, ok := expertModule(module); ok {
				lr := ad.experts[[2]int{l, int(p)}]
				in, out := c.ExpertDims(p)
				return lr.DA.Slice(e*g.Rank*in, g.Rank*in), lr.DB.Slice(e*out*g.Rank, out*g.Rank)
			}
			return ad.goldenAdapter[module].DA, ad.goldenAdapter[module].DB
		}
		for _, l := range gm.LoRA {
			a, b := slice(l.A), slice(l.B)
			if layer, e, p, ok := expertModule(l.Module); ok {
				key := [2]int{layer, int(p)}
				lr := ad.experts[key]
				in, out := c.ExpertDims(p)
				if lr == nil {
					ne := c.NumExperts
					lr = &model.ExpertLoRA{Rank: g.Rank, Scale: g.Scale,
						A: be.Alloc(kernels.F32, ne*g.Rank*in), B: be.Alloc(kernels.F32, ne*out*g.Rank),
						DA: be.Alloc(kernels.F32, ne*g.Rank*in), DB: be.Alloc(kernels.F32, ne*out*g.Rank)}
					ad.experts[key] = lr
					grads = append(grads, lr.DA, lr.DB)
				}
				be.Upload(lr.A.Slice(e*g.Rank*in, len(a)), a)
				be.Upload(lr.B.Slice(e*out*g.Rank, len(b)), b)
				continue
			}
			lr := &model.LoRA{Rank: g.Rank, Scale: g.Scale,
				A: be.Alloc(kernels.F32, len(a)), B: be.Alloc(kernels.F32, len(b)),
				DA: be.Alloc(kernels.F32, len(a)), DB: be.Alloc(kernels.F32, len(b))}
			be.Upload(lr.A, a)
			be.Upload(lr.B, b)
			ad.goldenAdapter[l.Module] = lr
			grads = append(grads, lr.DA, lr.DB)
		}
		policy := base.WithAdapter(ad)
		zeroGrads := func() {
			for _, buf := range grads {
				be.Fill(buf, 0, buf.Len())
			}
		}
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
			zeroGrads()
			base.Config.RouterAuxLossCoef = 0 // the load-balancing loss has a gradient of its own
			if _, err := PolicyGradient(policy, zero, DefaultConfig(), g.MaxTokens, 1<<20); err != nil {
				t.Fatal(err)
			}
			for _, buf := range grads {
				got := make([]float32, buf.Len())
				be.Download(got, buf)
				for _, v := range got {
					if v != 0 {
						t.Fatalf("gradient %v from a zero-advantage batch", v)
					}
				}
			}
		})
		for _, gc := range gm.Cases {
			t.Run(gm.Model+"/"+gc.Name, func(t *testing.T) {
				zeroGrads()
				eh := gc.EpsilonHigh
				cfg := Config{Type: gc.LossType, Epsilon: gc.Epsilon, EpsilonHigh: &eh, Beta: gc.Beta, MaskTruncated: gc.MaskTruncated,
					ImportanceSamplingLevel: gc.Level, ISCorrection: gc.IS, ISClipMin: gc.ISMin, ISClipMax: gc.ISMax,
					DPPOMaskLow: gc.DPPOMaskLow, DPPOMaskHigh: gc.DPPOMaskHigh, AdvTau: gc.AdvTau, KLTau: gc.KLTau}
				if err := cfg.Validate(); err != nil {
					t.Fatal(err)
				}
				// A small micro-batch budget exercises gradient
				// accumulation; the load-balancing loss is the whole
				// batch's in the reference, so its cases run one.
				micro := 16
				base.Config.RouterAuxLossCoef = gc.AuxCoef
				if gc.AuxCoef > 0 {
					micro = 1 << 20
				}
				st, err := PolicyGradient(policy, samples, cfg, g.MaxTokens, micro)
				if err != nil {
					t.Fatal(err)
				}
				if rel := math.Abs(st.Loss-gc.Loss) / math.Abs(gc.Loss); rel > 1e-5 {
					t.Errorf("loss %.9g, want %.9g (rel err %.2g)", st.Loss, gc.Loss, rel)
				}
				if math.Abs(st.AuxLoss-gc.AuxLoss) > 1e-6*math.Max(1, gc.AuxLoss) {
					t.Errorf("load-balancing loss %.9g, want %.9g", st.AuxLoss, gc.AuxLoss)
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
					da, db := gradOf(gg.Module)
					for _, pair := range []struct {
						name string
						buf  kernels.Buffer
						want golden.Array
					}{{"A", da, gg.A}, {"B", db, gg.B}} {
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
