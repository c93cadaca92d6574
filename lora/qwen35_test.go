package lora

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	goldens "github.com/grpo-dev/grpo/internal/golden"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// The PEFT-layout "all-linear" adapters qwen3_5_lora_grad.py writes for
// the tiny Qwen3.5 models (testdata/README.md).
var allLinear35 = []struct{ model, adapter string }{
	{"qwen3_5-tiny", "qwen3_5-tiny-all-linear"},
	{"qwen3_5-moe-tiny", "qwen3_5-moe-tiny-all-linear"},
}

// fileTensor is one tensor of a safetensors file as the test reads it.
type fileTensor struct {
	dtype safetensors.DType
	shape []int
	raw   []byte
	vals  []float32
}

// readTensors reads every tensor of a safetensors file and its metadata.
func readTensors(t testing.TB, path string) (map[string]fileTensor, map[string]string) {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]fileTensor{}
	for _, name := range f.Names() {
		tt, _ := f.Tensor(name)
		v, err := tt.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		out[name] = fileTensor{tt.DType, slices.Clone(tt.Shape), bytes.Clone(tt.Bytes()), v}
	}
	return out, f.Metadata()
}

// TestQwen35AllLinearRoundTrip: the PEFT adapters load onto the tiny
// models with every module of the file adapted, Save writes the same
// tensors back (names, dtypes, shapes, bytes), and New with
// ["all-linear"] builds exactly the modules PEFT's all-linear adapted.
func TestQwen35AllLinearRoundTrip(t *testing.T) {
	for _, tc := range allLinear35 {
		t.Run(tc.model, func(t *testing.T) {
			m := loadModel(t, tc.model)
			dir := filepath.Join(root, "testdata", "lora", tc.adapter)
			want, _ := readTensors(t, filepath.Join(dir, WeightsFileName))
			a, err := Load(dir, m)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range a.Params() {
				names = append(names, p.Name)
				if !strings.HasPrefix(p.Name, "base_model.model.model.language_model.layers.") {
					t.Errorf("param %s lacks the language model's prefix", p.Name)
				}
			}
			if len(names) != len(want) {
				t.Errorf("loaded %d matrices, the file holds %d", len(names), len(want))
			}
			out := filepath.Join(t.TempDir(), "a")
			if err := Save(out, a, "x"); err != nil {
				t.Fatal(err)
			}
			got, _ := readTensors(t, filepath.Join(out, WeightsFileName))
			if len(got) != len(want) {
				t.Fatalf("Save wrote %d tensors, the file has %d", len(got), len(want))
			}
			for name, w := range want {
				g, ok := got[name]
				if !ok || g.dtype != w.dtype || !slices.Equal(g.shape, w.shape) || !bytes.Equal(g.raw, w.raw) {
					t.Errorf("%s: wrote %v %v (present %v), file has %v %v, bytes equal %v", name, g.dtype, g.shape, ok, w.dtype, w.shape, bytes.Equal(g.raw, w.raw))
				}
			}
			fresh, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: []string{AllLinear}}, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range fresh.Params() {
				w, ok := want[p.Name]
				if !ok || !slices.Equal(w.shape, p.Shape[:]) {
					t.Errorf("all-linear adapts %s %v, which PEFT's adapter has not (%v %v)", p.Name, p.Shape, ok, w.shape)
				}
			}
			if len(fresh.Params()) != len(want) {
				t.Errorf("all-linear builds %d matrices, PEFT's adapter has %d", len(fresh.Params()), len(want))
			}
			// What Save writes, PEFT reads as the same modules: the config
			// names projections, not full module names.
			var cfg map[string]any
			raw, _ := os.ReadFile(filepath.Join(out, ConfigFileName))
			json.Unmarshal(raw, &cfg)
			var targets []string
			for _, x := range cfg["target_modules"].([]any) {
				targets = append(targets, x.(string))
			}
			var peft map[string]any
			raw, _ = os.ReadFile(filepath.Join(dir, ConfigFileName))
			json.Unmarshal(raw, &peft)
			var peftTargets []string
			for _, x := range peft["target_modules"].([]any) {
				peftTargets = append(peftTargets, x.(string))
			}
			slices.Sort(targets)
			if !slices.Equal(targets, peftTargets) || cfg["target_parameters"] != nil {
				t.Errorf("target_modules %v (target_parameters %v), PEFT's %v", targets, cfg["target_parameters"], peftTargets)
			}
		})
	}
}

// TestQwen35Merge: Merge adds scale·B·A to every adapted projection of
// the Qwen3.5 models (attention, DeltaNet, MLP, shared expert and its
// gate), checked against a plain loop over the checkpoint's W and the
// adapter file's A and B.
func TestQwen35Merge(t *testing.T) {
	for _, tc := range allLinear35 {
		t.Run(tc.model, func(t *testing.T) {
			m := loadModel(t, tc.model)
			dir := filepath.Join(root, "testdata", "lora", tc.adapter)
			a, err := Load(dir, m)
			if err != nil {
				t.Fatal(err)
			}
			if err := Merge(m, a); err != nil {
				t.Fatal(err)
			}
			base, _ := readTensors(t, filepath.Join(root, "testdata", "models", tc.model, "model.safetensors"))
			ad, _ := readTensors(t, filepath.Join(dir, WeightsFileName))
			const scale = 8.0 / 4
			checked := 0
			for layer := range m.Config.NumLayers {
				for p := range model.NumProj {
					if a.LoRA(layer, p) == nil {
						continue
					}
					mod := "model.language_model.layers." + strconv.Itoa(layer) + "." + p.Module()
					w, A, B := base[mod+".weight"], ad["base_model.model."+mod+".lora_A.weight"], ad["base_model.model."+mod+".lora_B.weight"]
					out, in, r := w.shape[0], w.shape[1], A.shape[0]
					got := download(m.Backend, weightOf(&m.W.Layers[layer], p))
					worst := 0.0
					for o := range out {
						for i := range in {
							want := float64(w.vals[o*in+i])
							for k := range r {
								want += scale * float64(B.vals[o*r+k]) * float64(A.vals[k*in+i])
							}
							worst = math.Max(worst, math.Abs(want-float64(got[o*in+i])))
						}
					}
					if worst > 1e-6 {
						t.Errorf("%s: merged weight off by %g", mod, worst)
					}
					checked++
				}
			}
			if checked != len(ad)/2 {
				t.Errorf("checked %d projections, the adapter has %d", checked, len(ad)/2)
			}
		})
	}
}

// copyAdapter copies an adapter directory to a temporary one.
func copyAdapter(t *testing.T, src string) string {
	dir := t.TempDir()
	for _, f := range []string{ConfigFileName, WeightsFileName} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	return dir
}

// TestQwen35ModuleNames: exclude_modules and the patterns match the
// language model's module names (model.language_model.layers.N.…), Save
// writes them so, and keys without the prefix are refused.
func TestQwen35ModuleNames(t *testing.T) {
	m := loadModel(t, "qwen3_5-tiny")
	src := filepath.Join(root, "testdata", "lora", "qwen3_5-tiny-all-linear")
	dir := copyAdapter(t, src)
	dropTensors(t, dir, ".layers.1.linear_attn.in_proj_z.")
	editConfig(t, dir, map[string]any{
		"exclude_modules": []string{"model.language_model.layers.1.linear_attn.in_proj_z"},
		"alpha_pattern":   map[string]float64{"model.language_model.layers.0.linear_attn.in_proj_qkv": 3, "layers.3.self_attn.q_proj": 5},
	})
	a, err := Load(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if a.LoRA(1, model.ProjInZ) != nil || a.LoRA(0, model.ProjInZ) == nil {
		t.Errorf("exclude_modules: layer 1 in_proj_z adapted %v, layer 0 %v", a.LoRA(1, model.ProjInZ) != nil, a.LoRA(0, model.ProjInZ) != nil)
	}
	for _, c := range []struct {
		layer int
		p     model.Proj
		alpha float64
	}{{0, model.ProjInQKV, 3}, {1, model.ProjInQKV, 8}, {3, model.ProjQ, 5}} {
		if _, alpha, _ := a.Module(c.layer, c.p); alpha != c.alpha {
			t.Errorf("layer %d %s: alpha %g, want %g", c.layer, c.p, alpha, c.alpha)
		}
	}
	out := filepath.Join(t.TempDir(), "a")
	if err := Save(out, a, "x"); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		TargetModules []string           `json:"target_modules"`
		AlphaPattern  map[string]float64 `json:"alpha_pattern"`
	}
	raw, _ := os.ReadFile(filepath.Join(out, ConfigFileName))
	json.Unmarshal(raw, &cfg)
	if cfg.AlphaPattern["model.language_model.layers.0.linear_attn.in_proj_qkv"] != 3 || cfg.AlphaPattern["model.language_model.layers.3.self_attn.q_proj"] != 5 {
		t.Errorf("alpha_pattern %v", cfg.AlphaPattern)
	}
	// in_proj_z is adapted in some layers only: full module names.
	if !slices.Contains(cfg.TargetModules, "model.language_model.layers.0.linear_attn.in_proj_z") || slices.Contains(cfg.TargetModules, "model.language_model.layers.1.linear_attn.in_proj_z") || len(cfg.TargetModules) != len(a.Params())/2 {
		t.Errorf("target_modules %v", cfg.TargetModules)
	}
	if b, err := Load(out, m); err != nil || len(b.Params()) != len(a.Params()) {
		t.Errorf("reload: %v", err)
	}
	// A causal LM's key names no module of Qwen3.5's model.
	bad := copyAdapter(t, src)
	rewriteTensors(t, bad, func(ts []safetensors.Tensor) []safetensors.Tensor {
		ts[0].Name = strings.Replace(ts[0].Name, "model.language_model.", "model.", 1)
		return ts
	})
	if _, err := Load(bad, m); err == nil || !strings.Contains(err.Error(), "base_model.model.model.language_model.layers.0.self_attn.q_proj.lora_A.weight") {
		t.Errorf("key without language_model: %v", err)
	}
}

// TestAllLinearTargets: "all-linear" stands alone; on the families whose
// adapters name transformers-v4 modules it is every projection (and
// Qwen3-MoE's routers, nn.Linear there).
func TestAllLinearTargets(t *testing.T) {
	if err := (Config{Rank: 2, Alpha: 4, TargetModules: []string{AllLinear, "q_proj"}}).Validate(); err == nil || !strings.Contains(err.Error(), "stands alone") {
		t.Errorf("all-linear with q_proj: %v", err)
	}
	if err := (Config{Rank: 2, Alpha: 4, TargetModules: []string{AllLinear}}).Validate(); err != nil {
		t.Errorf("all-linear: %v", err)
	}
	for _, name := range []string{"qwen3-tiny", "qwen2-tiny", "llama-tiny", "qwen3-moe-tiny-dense"} {
		m := loadModel(t, name)
		a, err := New(m, Config{Rank: 2, Alpha: 4, TargetModules: []string{AllLinear}}, 1)
		if err != nil {
			t.Fatal(err)
		}
		want := AllModules
		if m.Config.SparseLayers() > 0 {
			want = append([]string{model.RouterModule}, AllModules...)
		}
		b, _ := New(m, Config{Rank: 2, Alpha: 4, TargetModules: want}, 1)
		if len(a.Params()) != len(b.Params()) || a.Params()[0].Name != b.Params()[0].Name {
			t.Errorf("%s: all-linear builds %d matrices, %v %d", name, len(a.Params()), want, len(b.Params()))
		}
	}
}

// TestWriteMergedQwen35MoE: WriteMerged folds an adapter on every expert,
// the shared expert and the DeltaNet into a Qwen3.5-MoE checkpoint whose
// experts are stored fused and into one stored per expert; the merged
// checkpoints load to the weights Merge gives in memory.
func TestWriteMergedQwen35MoE(t *testing.T) {
	targets := append([]string{"in_proj_qkv", "out_proj", "shared_expert_gate"}, AllModules...)
	for _, name := range []string{"qwen3_5-moe-tiny", "qwen3_5-moe-tiny-perexpert"} {
		t.Run(name, func(t *testing.T) {
			m := loadModel(t, name)
			a, err := New(m, Config{Rank: 3, Alpha: 5, TargetModules: targets}, 2)
			if err != nil {
				t.Fatal(err)
			}
			nonZeroB(t, m, a, 9)
			out := filepath.Join(t.TempDir(), "merged")
			if err := WriteMerged(out, filepath.Join(root, "testdata", "models", name), a); err != nil {
				t.Fatal(err)
			}
			if err := Merge(m, a); err != nil {
				t.Fatal(err)
			}
			mm, err := model.Load(out, m.Backend)
			if err != nil {
				t.Fatal(err)
			}
			c := m.Config
			for layer := range c.NumLayers {
				var bufs [][2][]float32
				for p := range model.NumProj {
					if c.HasProj(layer, p) && !isExpertProj(c, layer, p) {
						bufs = append(bufs, [2][]float32{download(m.Backend, weightOf(&mm.W.Layers[layer], p)), download(m.Backend, weightOf(&m.W.Layers[layer], p))})
					}
				}
				for e := range c.NumExperts {
					for _, p := range []model.Proj{model.ProjGate, model.ProjUp, model.ProjDown} {
						bufs = append(bufs, [2][]float32{download(m.Backend, expertWeightOf(&mm.W.Layers[layer], e, p)), download(m.Backend, expertWeightOf(&m.W.Layers[layer], e, p))})
					}
				}
				for i, b := range bufs {
					if d := maxAbsDiff(b[0], b[1]); d != 0 {
						t.Fatalf("layer %d weight %d: merged checkpoint differs from Merge by %g", layer, i, d)
					}
				}
			}
		})
	}
}

// TestQwen35AdapterLogprobs: the PEFT adapters, loaded by name onto the
// tiny Qwen3.5 models, give the float64 PyTorch reference's log-probs
// (qwen3_5_lora_grad.py, applying PEFT's convention itself), and the
// model with the adapter merged gives the adapter-applied logits.
func TestQwen35AdapterLogprobs(t *testing.T) {
	var g struct {
		Tokens []int32 `json:"tokens"`
		Models []struct {
			Model    string        `json:"model"`
			Adapter  string        `json:"adapter"`
			Logprobs goldens.Array `json:"logprobs"`
		} `json:"models"`
	}
	vals, err := goldens.Read(filepath.Join(root, "testdata"), "qwen3_5_lora_grad.json", &g)
	if err != nil {
		t.Fatal(err)
	}
	for _, gm := range g.Models {
		t.Run(gm.Model, func(t *testing.T) {
			m := loadModel(t, gm.Model)
			a, err := Load(filepath.Join(root, gm.Adapter), m)
			if err != nil {
				t.Fatal(err)
			}
			adapted := logits(t, m.WithAdapter(a), g.Tokens)
			want, err := gm.Logprobs.Of(vals)
			if err != nil {
				t.Fatal(err)
			}
			v := m.Config.VocabSize
			worst := 0.0
			for i := range want {
				row := adapted[i*v : (i+1)*v]
				mx := math.Inf(-1)
				for _, x := range row {
					mx = math.Max(mx, float64(x))
				}
				sum := 0.0
				for _, x := range row {
					sum += math.Exp(float64(x) - mx)
				}
				lp := float64(row[g.Tokens[i+1]]) - mx - math.Log(sum)
				worst = math.Max(worst, math.Abs(lp-float64(want[i])))
			}
			if worst > 1e-4 {
				t.Errorf("log-probs off the reference by %g", worst)
			}
			if err := Merge(m, a); err != nil {
				t.Fatal(err)
			}
			if d := maxAbsDiff(logits(t, m, g.Tokens), adapted); d > 1e-4 {
				t.Errorf("merged model vs adapter: logits differ by %g", d)
			}
		})
	}
}
