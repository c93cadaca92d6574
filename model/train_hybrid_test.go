package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// TestHybridLoRAGradientsFiniteDifference: on the tiny Qwen3.5 models
// (three gated DeltaNet layers and one gated-attention layer; dense and
// MoE with a shared expert), the backward's gradient of every LoRA A and
// B — attention q/k/v/o, DeltaNet in_proj_qkv/z/b/a and out_proj, MLP,
// experts, router, shared expert and its gate — agrees with a central
// finite difference along itself within 1e-2 (checkAlongGradient says
// why not along a random direction, as TestLoRAGradientsFiniteDifference).
func TestHybridLoRAGradientsFiniteDifference(t *testing.T) {
	for _, name := range []string{"qwen3_5-tiny", "qwen3_5-moe-tiny", "glm4_moe-tiny", "gpt_oss-tiny"} {
		t.Run(name, func(t *testing.T) {
			be := cpu.New()
			m, err := Load("../testdata/models/"+name, be)
			if err != nil {
				t.Fatal(err)
			}
			var ad *testAdapter
			var experts *moeTestAdapter
			if m.Config.SparseLayers() > 0 {
				experts = newMoETestAdapter(m, 3, 5)
				ad = experts.testAdapter
				m = m.WithAdapter(experts)
			} else {
				ad = newTestAdapter(m, 3, 5)
				m = m.WithAdapter(ad)
			}
			// The test adapters' B (std 0.2) moves these models far from
			// linear over the difference's step (the conv, the l2 norms
			// and the gates curve sharply; in the MoE model a replayed
			// expert's renormalised weight does too, where the fresh
			// routing would pick another, 3e-3 along one direction): a
			// smaller B keeps the central difference's h³ error under the
			// bound. (The PyTorch golden, TestHybridLoRAGradientsMatchPyTorch,
			// holds the gradients themselves to NMSE 1e-6.)
			shrink := float32(0.25)
			if experts != nil {
				shrink = 0.1
			}
			for l := range ad.l {
				for p, lr := range ad.l[l] {
					for _, b := range []*LoRA{lr, expertAsLoRA(experts, l, Proj(p))} {
						if b != nil {
							be.Scale(b.B, shrink, b.B.Len())
						}
					}
				}
				if experts != nil && experts.routers[l] != nil {
					be.Scale(experts.routers[l].B, shrink, experts.routers[l].B.Len())
				}
			}
			rng := rand.New(rand.NewPCG(8, 9))
			b, targets := packedTrainBatch(rng, m.Config.VocabSize)
			if experts != nil {
				// Replayed routing: a perturbation cannot flip a top-k
				// choice and make the loss discontinuous.
				b.Experts = record(t, m, b)
			}
			c := make([]float32, b.Len())
			for i := range c {
				c[i] = float32(rng.NormFloat64())
			}
			tr, err := m.ForwardTrain(b, nil, targets)
			if err != nil {
				t.Fatal(err)
			}
			dlogp := be.Alloc(kernels.F32, len(c))
			be.Upload(dlogp, c)
			if err := tr.Backward(dlogp); err != nil {
				t.Fatal(err)
			}
			tr.Free()
			checked := map[Proj]bool{}
			for l := range ad.l {
				for p := range NumProj {
					for _, lr := range []*LoRA{ad.l[l][p], expertAsLoRA(experts, l, p)} {
						if lr == nil {
							continue
						}
						checked[p] = true
						for _, pair := range [][2]kernels.Buffer{{lr.A, lr.DA}, {lr.B, lr.DB}} {
							checkAlongGradient(t, m, b, targets, c, pair[0], pair[1], l, p)
						}
					}
				}
			}
			want := []Proj{ProjQ, ProjK, ProjV, ProjO, ProjGate, ProjUp, ProjDown, ProjInQKV, ProjInZ, ProjInB, ProjInA, ProjOut}
			if m.Config.SparseLayers() > 0 {
				want = append(want, ProjSharedGate, ProjSharedUp, ProjSharedDown, ProjSharedScale)
			}
			if a := m.Config.Arch(); a.SigmoidRouter || a.GptOssExperts {
				// GLM-4.5: attention, MLPs and ungated shared experts; and
				// its routers' adapters, whose gradient comes through the
				// sigmoid routing's backward. gpt-oss: attention and the
				// experts (through the clamped SwiGLU and the biases), and
				// the routers' through the biased top-k softmax.
				want = []Proj{ProjQ, ProjK, ProjV, ProjO, ProjGate, ProjUp, ProjDown, ProjSharedGate, ProjSharedUp, ProjSharedDown}
				if a.GptOssExperts {
					want = want[:7]
				}
				for l, r := range experts.routers {
					if r != nil {
						for _, pair := range [][2]kernels.Buffer{{r.A, r.DA}, {r.B, r.DB}} {
							checkAlongGradient(t, m, b, targets, c, pair[0], pair[1], l, ProjGate)
						}
					}
				}
			}
			for _, p := range want {
				if !checked[p] {
					t.Errorf("no adapter of %s was checked", p.Module())
				}
			}
		})
	}
}

// checkAlongGradient compares the backward's gradient g of param with a
// central difference of the loss along g itself: the derivative there
// is |g|, the largest any direction has, so the float32 loss's rounding
// (about 1e-7 of a loss near 40, over a step of 1e-3) stays far below
// the 1e-2 relative bound, where along a random direction the small
// derivatives of these models sink into it (the step is fitted to |g|,
// below). A gradient wrong in any
// sizeable part points elsewhere and falls short of |g|; the PyTorch
// golden (TestHybridLoRAGradientsMatchPyTorch) holds every element.
func checkAlongGradient(t *testing.T, m *Model, b *Batch, targets []int32, c []float32, param, grad kernels.Buffer, l int, p Proj) {
	t.Helper()
	checkAlongGradientOf(t, m.Backend, func() float64 { return weightedLogp(t, m, b, targets, c) }, param, grad, l, p)
}

// checkAlongGradientOf is checkAlongGradient for any loss of the
// parameters.
func checkAlongGradientOf(t *testing.T, be kernels.Backend, loss func() float64, param, grad kernels.Buffer, l int, p Proj) {
	t.Helper()
	w, g := make([]float32, param.Len()), make([]float32, grad.Len())
	be.Download(w, param)
	be.Download(g, grad)
	norm := 0.0
	for _, x := range g {
		norm += float64(x) * float64(x)
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		t.Errorf("layer %d %s: zero gradient", l, p)
		return
	}
	shifted := make([]float32, len(w))
	eval := func(step float64) float64 {
		for i := range w {
			shifted[i] = w[i] + float32(step*float64(g[i])/norm)
		}
		be.Upload(param, shifted)
		return loss()
	}
	// The step shrinks as the gradient grows: a steep direction curves
	// more over a step, a flat one needs the longer step to rise above
	// the loss's rounding.
	h := min(2e-2, 0.1/norm)
	central := func(h float64) float64 { return (eval(h) - eval(-h)) / (2 * h) }
	numeric := (4*central(h/2) - central(h)) / 3
	be.Upload(param, w)
	if d := math.Abs(numeric - norm); d > 1e-2*norm {
		t.Errorf("layer %d %s: |gradient| %.6g (backward) vs %.6g (finite difference along it), |Δ| %.2g", l, p, norm, numeric, d)
	}
}

// expertAsLoRA is layer l's stacked expert adapter of p as a LoRA (its A,
// B and gradients), or nil.
func expertAsLoRA(ad *moeTestAdapter, l int, p Proj) *LoRA {
	if ad == nil || ad.experts[l][p] == nil {
		return nil
	}
	e := ad.experts[l][p]
	return &LoRA{A: e.A, B: e.B, DA: e.DA, DB: e.DB}
}
