package loss

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// policyLossGolden is testdata/golden/policy_loss.json, written by
// testdata/reference/policy_loss.py (PyTorch autograd in float64, each
// gradient also checked there against central differences). A case is
// its settings under the script's key names, with its results.
type policyLossGolden struct {
	MaxTokens int `json:"max_tokens"`
	Samples   []struct {
		Logp, Behaviour, Ref []float32
		Advantage            float32
		Truncated            bool
		ModelMask            []bool `json:"model_mask"`
	}
	Cases []map[string]any
}

// TestPolicyLossMatchesPyTorch runs the loss step of PolicyGradient (the
// weights of its aggregation, π_old's choice, the sequences, PolicyLoss)
// on the golden batch's log-probs for every loss and correction, on the
// cpu and emu backends, and requires the batch loss and every token's
// ∂loss/∂logp within 1e-6 relative of autograd's (exactly 0 where
// autograd's is), and the clip, correction and mismatch metrics to match.
func TestPolicyLossMatchesPyTorch(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "golden", "policy_loss.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g policyLossGolden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	var samples []Sample
	for _, s := range g.Samples {
		smp := Sample{Prompt: []int32{1}, Completion: make([]int32, len(s.Logp)), ModelMask: s.ModelMask,
			OldLogp: s.Behaviour, Advantage: s.Advantage, Truncated: s.Truncated}
		samples = append(samples, smp)
	}
	backends := map[string]func() kernels.Backend{"cpu": func() kernels.Backend { return cpu.New() }, "emu": func() kernels.Backend { return emu.New() }}
	for bn, newBackend := range backends {
		for _, c := range g.Cases {
			num := func(key string) float64 { return c[key].(float64) }
			name := c["name"].(string)
			eh := num("epsilon_high")
			cfg := Config{Type: c["loss_type"].(string), Epsilon: num("epsilon"), EpsilonHigh: &eh, Beta: num("beta"),
				ImportanceSamplingLevel: c["level"].(string), ISCorrection: c["is"].(string), ISClipMin: num("is_min"), ISClipMax: num("is_max"),
				DPPOMaskLow: num("dppo_mask_low"), DPPOMaskHigh: num("dppo_mask_high"), AdvTau: num("adv_tau"), KLTau: num("kl_tau"),
				MaskTruncated: c["mask_truncated"].(bool)}
			t.Run(bn+"/"+name, func(t *testing.T) {
				if err := cfg.Validate(); err != nil {
					t.Fatal(err)
				}
				be := newBackend()
				weights, total := tokenWeights(samples, CountBatch(samples, cfg), cfg, g.MaxTokens)
				var lr lossRows
				var logp, ref []float32
				start := int32(0)
				for i := range samples {
					lr.add(&samples[i], start, weights[i])
					start += int32(samples[i].SeqLen())
					for j, w := range weights[i] {
						if w != 0 {
							logp, ref = append(logp, g.Samples[i].Logp[j]), append(ref, g.Samples[i].Ref[j])
						}
					}
				}
				n := len(logp)
				upload := func(v []float32) kernels.Buffer {
					b := be.Alloc(kernels.F32, len(v))
					be.Upload(b, v)
					return b
				}
				logpBuf, refBuf := upload(logp), kernels.Buffer(nil)
				if cfg.Beta != 0 {
					refBuf = upload(ref)
				}
				st := newStepStats(be, n, cfg.Beta != 0)
				defer st.free()
				dlogp := policyLoss(be, logpBuf, refBuf, &lr, cfg, st)
				st.off += n
				var sums lossSums
				if err := st.read(&sums); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, n)
				be.Download(got, dlogp)
				if rel := math.Abs(sums.loss-num("loss")) / math.Abs(num("loss")); !(rel <= 1e-6) {
					t.Errorf("loss %.9g, want %.9g (rel err %.2g)", sums.loss, num("loss"), rel)
				}
				worst, r := 0.0, 0
				grads := c["grads"].([]any)
				for i := range samples {
					for j, w := range weights[i] {
						wg := grads[i].([]any)[j].(float64)
						if w == 0 {
							if wg != 0 {
								t.Fatalf("sample %d token %d: autograd's gradient %g on a token grpo leaves out", i, j, wg)
							}
							continue
						}
						d := float64(got[r])
						if wg == 0 && d != 0 {
							t.Errorf("sample %d token %d: dlogp %g, want exactly 0", i, j, d)
						} else if wg != 0 {
							worst = math.Max(worst, math.Abs(d-wg)/math.Abs(wg))
						}
						r++
					}
				}
				if !(worst <= 1e-6) {
					t.Errorf("worst dlogp rel err %.2g > 1e-6", worst)
				}
				tt := float64(total)
				for _, m := range []struct {
					name      string
					got, want float64
					tol       float64
				}{
					{"clip_low", float64(sums.clipLow) / tt, num("clip_low"), 0}, {"clip_high", float64(sums.clipHigh) / tt, num("clip_high"), 0},
					{"is_low", float64(sums.isLow) / tt, num("is_low"), 0}, {"is_high", float64(sums.isHigh) / tt, num("is_high"), 0},
					{"mismatch_kl", sums.mismatch / tt, num("mismatch_kl"), 1e-6 * num("mismatch_kl")},
				} {
					if !(math.Abs(m.got-m.want) <= m.tol+1e-12) {
						t.Errorf("%s %.9g, want %.9g", m.name, m.got, m.want)
					}
				}
				t.Logf("loss rel err %.2g, worst dlogp rel err %.2g", math.Abs(sums.loss-num("loss"))/math.Abs(num("loss")), worst)
			})
		}
	}
}
