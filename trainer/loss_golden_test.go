package trainer

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// The golden file testdata/golden/grpo_loss.json is written by
// testdata/reference/grpo_loss.py: PyTorch autograd in float64 over the
// same tiny models, adapters and rollouts.
type goldenArray struct {
	Offset int   `json:"offset"`
	Shape  []int `json:"shape"`
}

type goldenLoRA struct {
	Module string      `json:"module"`
	A, B   goldenArray `json:"-"`
	RawA   goldenArray `json:"A"`
	RawB   goldenArray `json:"B"`
}

type goldenLossFile struct {
	Rank      int     `json:"rank"`
	Scale     float32 `json:"scale"`
	MaxTokens int     `json:"max_tokens"`
	Data      string  `json:"data"`
	Models    []struct {
		Model   string       `json:"model"`
		LoRA    []goldenLoRA `json:"lora"`
		Samples []struct {
			Prompt     []int32   `json:"prompt"`
			Completion []int32   `json:"completion"`
			Advantage  float32   `json:"advantage"`
			Truncated  bool      `json:"truncated"`
			ModelMask  []bool    `json:"model_mask"`
			OldLogp    []float32 `json:"old_logp"`
		} `json:"samples"`
		Cases []struct {
			Name          string       `json:"name"`
			LossType      string       `json:"loss_type"`
			Epsilon       float64      `json:"epsilon"`
			EpsilonHigh   float64      `json:"epsilon_high"`
			Beta          float64      `json:"beta"`
			MaskTruncated bool         `json:"mask_truncated"`
			Loss          float64      `json:"loss"`
			TrainedTokens int          `json:"trained_tokens"`
			EntropyMean   float64      `json:"entropy_mean"`
			KLMean        float64      `json:"kl_mean"`
			Grads         []goldenLoRA `json:"grads"`
		} `json:"cases"`
	} `json:"models"`
}

// goldenAdapter is a LoRA on every projection, addressed by HF module name.
type goldenAdapter map[string]*model.LoRA

func (g goldenAdapter) LoRA(layer int, p model.Proj) *model.LoRA {
	return g[fmt.Sprintf("model.layers.%d.%s", layer, p.Module())]
}

func readF32(t *testing.T, path string) []float32 {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(raw)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return v
}

func slice(vals []float32, a goldenArray) []float32 {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return vals[a.Offset : a.Offset+n]
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
	dir := filepath.Join("..", "testdata", "golden")
	js, err := os.ReadFile(filepath.Join(dir, "grpo_loss.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g goldenLossFile
	if err := json.Unmarshal(js, &g); err != nil {
		t.Fatal(err)
	}
	vals := readF32(t, filepath.Join(dir, g.Data))
	for _, gm := range g.Models {
		be := cpu.New()
		base, err := model.Load(filepath.Join("..", "testdata", "models", gm.Model), be)
		if err != nil {
			t.Fatal(err)
		}
		ad := goldenAdapter{}
		for _, l := range gm.LoRA {
			a, b := slice(vals, l.RawA), slice(vals, l.RawB)
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
			if _, err := PolicyGradient(policy, zero, DefaultLoss(), g.MaxTokens, 1<<20); err != nil {
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
				cfg := LossConfig{Type: gc.LossType, Epsilon: gc.Epsilon, EpsilonHigh: &eh, Beta: gc.Beta, MaskTruncated: gc.MaskTruncated}
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
						want goldenArray
					}{{"A", lr.DA, gg.RawA}, {"B", lr.DB, gg.RawB}} {
						got := make([]float32, pair.buf.Len())
						be.Download(got, pair.buf)
						if e := nmse(got, slice(vals, pair.want)); e > worst || math.IsNaN(e) {
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
