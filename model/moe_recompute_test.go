package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// TestRecomputeMoEBitIdentical: on the CPU backend every recompute
// setting gives a Qwen3-MoE model's log-probs, load-balancing loss,
// routing mismatch and every gradient — attention, expert and router
// adapters — of RecomputeNone bit for bit, with the routing computed by
// the forward and with a recorded one replayed: a checkpointed sparse
// layer's rerun replays the forward's experts, so it differentiates the
// routing the forward took (the replayed routing is random, not the
// model's own). The tiny models: every layer sparse (f32 and
// bf16), and sparse, dense, sparse (a dense layer between the two).
func TestRecomputeMoEBitIdentical(t *testing.T) {
	const auxCoef = 0.3
	for _, name := range []string{"qwen3-moe-tiny", "qwen3-moe-tiny-bf16", "qwen3-moe-tiny-dense"} {
		t.Run(name, func(t *testing.T) {
			base := loadTiny(t, name)
			defer base.Free()
			ad := newMoETestAdapter(base, 3, 11)
			rng := rand.New(rand.NewPCG(7, 8))
			var b Batch
			var allTargets []int32
			for s, n := range []int{11, 5, 8} {
				ids := randomIDs(rng, n+1, base.Config.VocabSize)
				b.Add(s, 0, ids[:n]...)
				allTargets = append(allTargets, ids[1:]...)
			}
			var rows, targets []int32
			var dlogp []float32
			for i := b.Len() - 1; i >= 0; i -= 2 {
				rows, targets = append(rows, int32(i)), append(targets, allTargets[i])
				dlogp = append(dlogp, float32(rng.NormFloat64()))
			}
			settings := append(recomputeSettings, "swiglu+layer:1")
			if base.Config.NumLayers > 2 {
				settings = append(settings, "layer:2", "selective+layer:2")
			}
			// A replayed routing the model would not take: random distinct
			// experts per token and sparse layer, so a rerun routing afresh
			// would differentiate another MLP than the forward ran.
			c := base.Config
			recorded := make([]int32, c.RoutingLen(b.Len()))
			for i := 0; i < len(recorded); i += c.NumExpertsPerTok {
				for j, e := range rng.Perm(c.NumExperts)[:c.NumExpertsPerTok] {
					recorded[i+j] = int32(e)
				}
			}
			for _, replay := range []bool{false, true} {
				rb := b
				if replay {
					rb.Experts = recorded
				}
				var want moeTraced
				for _, setting := range settings {
					m := base.WithAdapter(ad)
					var err error
					if m.Recompute, m.CheckpointLayers, err = ParseRecomputeSetting(setting); err != nil {
						t.Fatal(err)
					}
					got := moeTrainGrads(t, m, ad, &rb, rows, targets, dlogp, auxCoef)
					if setting == "none" {
						want = got
						continue
					}
					what := setting
					if replay {
						what += " (routing replayed)"
					}
					if replay && !(want.mismatch > 0) {
						t.Fatalf("a random routing replayed: mismatch %v, want > 0", want.mismatch)
					}
					if got.aux != want.aux || got.mismatch != want.mismatch {
						t.Errorf("recompute %s: load-balancing loss %v, mismatch %v; %v, %v without recompute", what, got.aux, got.mismatch, want.aux, want.mismatch)
					}
					if i := firstBitDiff(got.logp, want.logp); i >= 0 {
						t.Errorf("recompute %s: log-prob %d is %g, %g without recompute", what, i, got.logp[i], want.logp[i])
					}
					for k := range want.grads {
						if i := firstBitDiff(got.grads[k], want.grads[k]); i >= 0 {
							t.Errorf("recompute %s: gradient tensor %d element %d is %g, %g without recompute", what, k, i, got.grads[k][i], want.grads[k][i])
							break
						}
					}
				}
			}
		})
	}
}

// TestRecomputeLayerAuxNeedsRouterAdapter: a checkpointed sparse layer
// keeps its router logits only when the model adapts a router (the one
// case the loss sets AuxCoef), so a load-balancing loss asked of a trace
// that kept none is an error, not a nil buffer read.
func TestRecomputeLayerAuxNeedsRouterAdapter(t *testing.T) {
	base := loadTiny(t, "qwen3-moe-tiny")
	defer base.Free()
	m := base.WithAdapter(newTestAdapter(base, 2, 3))
	m.Recompute = RecomputeLayer
	rng := rand.New(rand.NewPCG(1, 2))
	b, targets := packedTrainBatch(rng, m.Config.VocabSize)
	tr, err := m.ForwardTrain(b, nil, targets)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	tr.AuxCoef = 0.1
	d := m.Backend.Alloc(kernels.F32, tr.Rows())
	defer m.Backend.Free(d)
	if err := tr.Backward(d); err == nil || !strings.Contains(err.Error(), "router logits") {
		t.Errorf("Backward with AuxCoef and no router adapter under recompute = layer: %v", err)
	}
}

type moeTraced struct {
	traced
	aux, mismatch float64
}

// moeTrainGrads is trainGrads for a moeTestAdapter, with the
// load-balancing loss weighted by auxCoef.
func moeTrainGrads(t *testing.T, m *Model, ad *moeTestAdapter, b *Batch, rows, targets []int32, dlogp []float32, auxCoef float32) moeTraced {
	t.Helper()
	be := m.Backend
	var grads []kernels.Buffer
	for l := range ad.l {
		for p := range NumProj {
			if lr := ad.l[l][p]; lr != nil {
				grads = append(grads, lr.DA, lr.DB)
			}
			if lr := ad.experts[l][p]; lr != nil {
				grads = append(grads, lr.DA, lr.DB)
			}
		}
		if lr := ad.routers[l]; lr != nil {
			grads = append(grads, lr.DA, lr.DB)
		}
	}
	for _, g := range grads {
		be.Fill(g, 0, g.Len())
	}
	tr, err := m.ForwardTrain(b, rows, targets)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	tr.AuxCoef = auxCoef
	d := be.Alloc(kernels.F32, len(dlogp))
	defer be.Free(d)
	be.Upload(d, dlogp)
	if err := tr.Backward(d); err != nil {
		t.Fatal(err)
	}
	out := moeTraced{traced: traced{logp: make([]float32, tr.Rows())}, aux: tr.AuxLoss, mismatch: tr.RoutingMismatch}
	if auxCoef != 0 && (!(out.aux > 0) || math.IsInf(out.aux, 0)) {
		t.Fatalf("load-balancing loss %v", out.aux)
	}
	be.Download(out.logp, tr.Logp)
	for _, g := range grads {
		v := make([]float32, g.Len())
		be.Download(v, g)
		out.grads = append(out.grads, v)
	}
	return out
}
