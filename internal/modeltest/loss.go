package modeltest

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
)

// checkGoldenLoss runs every case of testdata/golden/<file> (grpo_loss.json:
// each loss_type, clip-higher, the KL penalty, env-token masking,
// mask_truncated; grpo_loss_moe.json: the same on Qwen3-MoE with expert
// and router adapters, and the load-balancing loss; grpo_loss_family.json:
// GSPO, CISPO, DPPO+KL and the behaviour corrections) on be and on the CPU
// backend, and holds be's loss, entropy, KL and LoRA gradients to both: to
// PyTorch with the CPU backend's own bars, to the CPU backend with the
// model's bounds (boundsFor). Each expert's gradient is compared on its
// own.
func checkGoldenLoss(t *testing.T, be kernels.Backend, testdata, file string) {
	var g lossFile
	vals, err := readGolden(testdata, file, &g)
	if err != nil {
		t.Fatal(err)
	}
	for _, gm := range g.Models {
		t.Run(gm.Model, func(t *testing.T) {
			dir := filepath.Join(testdata, "models", gm.Model)
			m, ref := loadBoth(t, be, dir)
			defer m.Free()
			defer ref.Free()
			cpuBE := ref.Backend
			ab := map[string][2][]float32{}
			for _, l := range gm.LoRA {
				a, err1 := l.A.Of(vals)
				b, err2 := l.B.Of(vals)
				if err1 != nil || err2 != nil {
					t.Fatalf("%s %s %s: %v %v", file, gm.Model, l.Module, err1, err2)
				}
				// An expert's pair joins its projection's stack, in
				// expert order (the file lists experts in order).
				key, _ := stackedModule(l.Module)
				ab[key] = [2][]float32{append(ab[key][0], a...), append(ab[key][1], b...)}
			}
			ad, cpuAd := newAdapter(be, g.Rank, g.Scale, ab), newAdapter(cpuBE, g.Rank, g.Scale, ab)
			defer ad.free(be)
			defer cpuAd.free(cpuBE)
			var samples []loss.Sample
			for _, s := range gm.Samples {
				samples = append(samples, loss.Sample{Prompt: s.Prompt, Completion: s.Completion, ModelMask: s.ModelMask,
					OldLogp: s.OldLogp, Advantage: s.Advantage, Truncated: s.Truncated})
			}
			for _, gc := range gm.Cases {
				t.Run(gc.Name, func(t *testing.T) {
					eh := gc.EpsilonHigh
					cfg := loss.Config{Type: gc.LossType, Epsilon: gc.Epsilon, EpsilonHigh: &eh, Beta: gc.Beta, MaskTruncated: gc.MaskTruncated,
						ImportanceSamplingLevel: gc.Level, ISCorrection: gc.IS, ISClipMin: gc.ISMin, ISClipMax: gc.ISMax,
						DPPOMaskLow: gc.DPPOMaskLow, DPPOMaskHigh: gc.DPPOMaskHigh, AdvTau: gc.AdvTau, KLTau: gc.KLTau}
					// A 16-token micro-batch budget exercises gradient
					// accumulation across micro-batches; the load-balancing
					// loss is the whole batch's in the reference.
					micro := 16
					m.Config.RouterAuxLossCoef, ref.Config.RouterAuxLossCoef = gc.AuxCoef, gc.AuxCoef
					if gc.AuxCoef > 0 {
						micro = 1 << 20
					}
					st, grads := gradient(t, m, ad, samples, cfg, g.MaxTokens, micro)
					cpuSt, cpuGrads := gradient(t, ref, cpuAd, samples, cfg, g.MaxTokens, micro)
					bd := boundsFor(m)
					compareStats(t, bd, st, cpuSt)
					w := compareGrads(t, bd, grads, cpuGrads)

					if rel := math.Abs(st.Loss-gc.Loss) / math.Abs(gc.Loss); !(rel <= goldenLossRel) {
						t.Errorf("loss %.9g, PyTorch %.9g (rel %.2g > %g)", st.Loss, gc.Loss, rel, goldenLossRel)
					}
					if st.Tokens != gc.TrainedTokens {
						t.Errorf("trained tokens %d, PyTorch %d", st.Tokens, gc.TrainedTokens)
					}
					wantKL := gc.KLMean
					if gc.Beta == 0 {
						wantKL = 0 // KL is measured only when the penalty is on
					}
					if !(math.Abs(st.Entropy-gc.EntropyMean) <= 1e-5) || !(math.Abs(st.KL-wantKL) <= 1e-6) {
						t.Errorf("entropy %.7g kl %.7g, PyTorch %.7g %.7g", st.Entropy, st.KL, gc.EntropyMean, wantKL)
					}
					if math.Abs(st.AuxLoss-gc.AuxLoss) > 1e-6*math.Max(1, gc.AuxLoss) {
						t.Errorf("load-balancing loss %.9g, PyTorch %.9g", st.AuxLoss, gc.AuxLoss)
					}
					var gw worst
					for _, gg := range gc.Grads {
						key, expert := stackedModule(gg.Module)
						for i, arr := range []array{gg.A, gg.B} {
							want, err := arr.Of(vals)
							if err != nil {
								t.Fatalf("%s %s %s grads: %v", file, gc.Name, gg.Module, err)
							}
							got := grads[key][i]
							if expert >= 0 {
								got = got[expert*len(want) : (expert+1)*len(want)]
							}
							gw.add(compare(got, want), gg.Module+".d"+[]string{"A", "B"}[i])
						}
					}
					if len(gc.Grads) != len(gm.LoRA) {
						t.Errorf("%s %s has gradients of %d modules, the adapter %d", file, gc.Name, len(gc.Grads), len(gm.LoRA))
					}
					if !(gw.d.NMSE <= goldenGradNMSE) {
						t.Errorf("worst gradient NMSE against PyTorch %.3g at %s > %g", gw.d.NMSE, gw.where, goldenGradNMSE)
					}
					t.Logf("loss rel %.2g against PyTorch; gradients: against PyTorch worst NMSE %.2g (%s), against the CPU backend %s (%s)",
						math.Abs(st.Loss-gc.Loss)/math.Abs(gc.Loss), gw.d.NMSE, gw.where, w.d, w.where)
				})
			}
		})
	}
}

// stackedModule maps a golden module name to the adapter's key: an
// expert's ("model.layers.L.mlp.experts.E.gate_proj") to its projection's
// stack (expertModule) and its index; any other to itself and −1.
func stackedModule(module string) (string, int) {
	var layer, expert int
	var proj string
	if n, _ := fmt.Sscanf(module, "model.layers.%d.mlp.experts.%d.%s", &layer, &expert, &proj); n == 3 {
		if p, err := model.ParseProj(proj); err == nil {
			return expertModule(layer, p), expert
		}
	}
	return module, -1
}
