package model

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/golden"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// loraGradGolden is testdata/golden/qwen3_5_lora_grad.json: per model, an
// all-linear adapter's A and B (as PEFT would adapt Qwen3.5), the loss
// weights and, from testdata/reference/qwen3_5_lora_grad.py's float64
// autograd, the log-probs and every A's and B's gradient.
type loraGradGolden struct {
	Tokens []int32 `json:"tokens"`
	Scale  float32 `json:"scale"`
	Rank   int     `json:"rank"`
	Models []struct {
		Model    string       `json:"model"`
		Weights  golden.Array `json:"weights"`
		Logprobs golden.Array `json:"logprobs"`
	} `json:"models"`
}

// TestHybridLoRAGradientsMatchPyTorch is the Qwen3.5 training bar: with
// an all-linear adapter (DeltaNet, gated attention, MLP and shared-expert
// projections), the training forward's log-probs of a 64-token sequence
// match the float64 reference within 1e-4 and the gradient of every LoRA
// A and B has NMSE ≤ 1e-6 against autograd's.
func TestHybridLoRAGradientsMatchPyTorch(t *testing.T) {
	checkLoRAGradGolden(t, "qwen3_5_lora_grad.json")
}

// TestGLMLoRAGradientsMatchPyTorch is the same bar for GLM-4.5
// (testdata/reference/glm4_moe_lora_grad.py): an all-linear adapter
// (attention, the dense layer's MLP, the shared experts), whose lower
// layers' gradients pass through the sparse layers' sigmoid routing.
func TestGLMLoRAGradientsMatchPyTorch(t *testing.T) {
	checkLoRAGradGolden(t, "glm4_moe_lora_grad.json")
}

// checkLoRAGradGolden checks the log-probs and LoRA gradients of every
// model of the golden file (qwen3_5_lora_grad.py's format) on the CPU.
func checkLoRAGradGolden(t *testing.T, file string) {
	checkLoRAGradGoldenOn(t, file, func() kernels.Backend { return cpu.New() })
}

// checkLoRAGradGoldenOn is checkLoRAGradGolden on the backends newBackend
// makes (one per model).
func checkLoRAGradGoldenOn(t *testing.T, file string, newBackend func() kernels.Backend) {
	var g loraGradGolden
	vals, err := golden.Read(filepath.Join("..", "testdata"), file, &g)
	if err != nil {
		t.Fatal(err)
	}
	// Each module's A, B, grad_A and grad_B, from the raw manifest.
	raw := map[string]any{}
	if _, err := golden.Read(filepath.Join("..", "testdata"), file, &raw); err != nil {
		t.Fatal(err)
	}
	for mi, gm := range g.Models {
		t.Run(gm.Model, func(t *testing.T) {
			be := newBackend()
			m, err := Load(filepath.Join("..", "testdata", "models", gm.Model), be)
			if err != nil {
				t.Fatal(err)
			}
			ad := &testAdapter{l: make([][NumProj]*LoRA, m.Config.NumLayers)}
			type want struct {
				lr           *LoRA
				gradA, gradB []float32
				name         string
			}
			var wants []want
			mods := raw["models"].([]any)[mi].(map[string]any)["lora"].([]any)
			for _, mod := range mods {
				mm := mod.(map[string]any)
				name := mm["module"].(string)
				l, p, err := parseModule(m.Config, name)
				if err != nil {
					t.Fatal(err)
				}
				arr := func(key string) []float32 {
					a := mm[key].(map[string]any)
					var shape []int
					for _, d := range a["shape"].([]any) {
						shape = append(shape, int(d.(float64)))
					}
					v, err := golden.Array{Offset: int(a["offset"].(float64)), Shape: shape}.Of(vals)
					if err != nil {
						t.Fatal(err)
					}
					return v
				}
				up := func(v []float32) kernels.Buffer {
					b := be.Alloc(kernels.F32, len(v))
					be.Upload(b, v)
					return b
				}
				av, bv := arr("A"), arr("B")
				lr := &LoRA{A: up(av), B: up(bv), DA: be.Alloc(kernels.F32, len(av)), DB: be.Alloc(kernels.F32, len(bv)), Rank: g.Rank, Scale: g.Scale}
				ad.l[l][p] = lr
				wants = append(wants, want{lr, arr("grad_A"), arr("grad_B"), name})
			}
			m = m.WithAdapter(ad)
			weights, _ := gm.Weights.Of(vals)
			wantLp, _ := gm.Logprobs.Of(vals)
			var b Batch
			b.Add(0, 0, g.Tokens[:len(g.Tokens)-1]...)
			tr, err := m.ForwardTrain(&b, nil, g.Tokens[1:])
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Free()
			lp := make([]float32, tr.Rows())
			be.Download(lp, tr.Logp)
			if d := maxAbsDiff(lp, wantLp); d > 1e-4 {
				t.Errorf("log-probs: max |Δ| %.3g > 1e-4", d)
			} else {
				t.Logf("log-probs: max |Δ| %.3g", d)
			}
			dlogp := be.Alloc(kernels.F32, len(weights))
			be.Upload(dlogp, weights)
			if err := tr.Backward(dlogp); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for _, w := range wants {
				for _, pair := range []struct {
					got  kernels.Buffer
					want []float32
					what string
				}{{w.lr.DA, w.gradA, "A"}, {w.lr.DB, w.gradB, "B"}} {
					got := make([]float32, pair.got.Len())
					be.Download(got, pair.got)
					e := nmse(got, pair.want)
					worst = max(worst, e)
					if e > 1e-6 {
						t.Errorf("%s lora_%s: gradient NMSE %.3g > 1e-6", w.name, pair.what, e)
					}
				}
			}
			t.Logf("%d adapted modules: worst gradient NMSE %.3g", len(wants), worst)
		})
	}
}

// parseModule maps a module path of the checkpoint
// (model.language_model.layers.3.self_attn.q_proj) to its layer and Proj.
func parseModule(c *Config, name string) (int, Proj, error) {
	rest, ok := strings.CutPrefix(name, c.TensorPrefix()+"layers.")
	if !ok {
		return 0, 0, fmt.Errorf("module %q is not under %slayers", name, c.TensorPrefix())
	}
	var l int
	if _, err := fmt.Sscanf(rest, "%d.", &l); err != nil {
		return 0, 0, fmt.Errorf("module %q: %v", name, err)
	}
	mod := rest[strings.Index(rest, ".")+1:]
	for p := range NumProj {
		if c.ProjModule(p) == mod && c.HasProj(l, p) {
			return l, p, nil
		}
	}
	return 0, 0, fmt.Errorf("module %q is no projection of layer %d", name, l)
}

// nmse is Σ(got − want)² / Σ want².
func nmse(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	if den == 0 {
		return num
	}
	return num / den
}

// TestNemotronLoRAGradientsMatchPyTorch is the same bar for Nemotron-3
// (testdata/reference/nemotron_h_lora_grad.py): an all-linear adapter
// (Mamba-2 in_proj/out_proj, attention, the dense MLP, the shared
// experts), whose lower layers' gradients pass through the Mamba scans and
// convs and the MoE layer's sigmoid routing.
func TestNemotronLoRAGradientsMatchPyTorch(t *testing.T) {
	checkLoRAGradGolden(t, "nemotron_h_lora_grad.json")
}

// TestNemotronLatentLoRAGradientsMatchPyTorch is the same bar for
// Nemotron-3-Super's latent MoE (nemotron_h-latent-tiny): all-linear
// adds fc1_latent_proj and fc2_latent_proj, and the MoE layer's input
// gradient passes through the latent experts, the router and the shared
// expert together.
func TestNemotronLatentLoRAGradientsMatchPyTorch(t *testing.T) {
	checkLoRAGradGolden(t, "nemotron_h_latent_lora_grad.json")
}
