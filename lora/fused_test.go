package lora

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// pref is the tiny Qwen3.5-MoE's layer prefix in PEFT keys.
const pref = "base_model.model.model.language_model.layers."

// pefDelta is expert e's update from a fused pair as PEFT's
// ParamWrapper.get_delta_weight defines it: A reshaped (E, r, in), B
// reshaped (out, r, E), delta[o][i] = scale·Σ_k B[o, k, e]·A[e, k, i].
func peftDelta(A, B fileTensor, ne, e int, scale float64) [][]float64 {
	r, in, out := A.shape[0]/ne, A.shape[1], B.shape[0]
	d := make([][]float64, out)
	for o := range out {
		d[o] = make([]float64, in)
		for k := range r {
			b := float64(B.vals[o*r*ne+k*ne+e])
			for i := range in {
				d[o][i] += scale * b * float64(A.vals[(e*r+k)*in+i])
			}
		}
	}
	return d
}

// expertUpdate is scale·B·A of expert e's projection p in a.
func expertUpdate(t *testing.T, a *Adapter, layer, e int, p model.Proj) [][]float64 {
	if _, _, ok := a.ExpertModule(layer, p); !ok {
		t.Fatalf("layer %d %s: not adapted", layer, p)
	}
	in, out := a.cfg.ExpertDims(p)
	w := make([]float64, in*out)
	a.addExpertDelta(w, layer, e, p)
	d := make([][]float64, out)
	for o := range d {
		d[o] = w[o*in : (o+1)*in]
	}
	return d
}

func nonZeroB(t *testing.T, m *model.Model, a *Adapter, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 2))
	for _, p := range a.Params() {
		if strings.Contains(p.Name, "lora_B") {
			v := make([]float32, p.Value.Len())
			for i := range v {
				v[i] = float32(rng.NormFloat64() * 0.05)
			}
			m.Backend.Upload(p.Value, v)
		}
	}
}

// TestFusedExpertsSave: a Qwen3.5-MoE adapter with every expert's
// gate/up/down adapted is written as PEFT's target_parameters layout,
// whose update (by PEFT's own reshape rule, which vLLM shares) is grpo's,
// and loads back bit for bit.
func TestFusedExpertsSave(t *testing.T) {
	m := loadModel(t, "qwen3_5-moe-tiny")
	a, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: AllModules}, 3)
	if err != nil {
		t.Fatal(err)
	}
	nonZeroB(t, m, a, 5)
	dir := filepath.Join(t.TempDir(), "a")
	if err := Save(dir, a, "x"); err != nil {
		t.Fatal(err)
	}
	file, _ := readTensors(t, filepath.Join(dir, WeightsFileName))
	c := m.Config
	ne, h, inter := c.NumExperts, c.HiddenSize, c.MoEIntermediateSize
	for name := range file {
		if strings.Contains(name, ".experts.0.") {
			t.Errorf("per-expert tensor %s written", name)
		}
	}
	var cfg struct {
		TargetParameters []string           `json:"target_parameters"`
		RankPattern      map[string]int     `json:"rank_pattern"`
		AlphaPattern     map[string]float64 `json:"alpha_pattern"`
		TargetModules    []string           `json:"target_modules"`
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ConfigFileName))
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.TargetParameters, []string{"mlp.experts.gate_up_proj", "mlp.experts.down_proj"}) {
		t.Errorf("target_parameters %v", cfg.TargetParameters)
	}
	if !slices.Equal(cfg.TargetModules, []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}) {
		t.Errorf("target_modules %v", cfg.TargetModules)
	}
	for layer := range c.NumLayers {
		l := pref + strconv.Itoa(layer) + ".mlp.experts."
		gu := "model.language_model.layers." + strconv.Itoa(layer) + ".mlp.experts.gate_up_proj"
		if cfg.RankPattern[gu] != 8 || cfg.AlphaPattern[gu] != 16 || len(cfg.RankPattern) != c.NumLayers {
			t.Fatalf("rank_pattern %v alpha_pattern %v: want %s at rank 8, alpha 16 (the scale of 8/4)", cfg.RankPattern, cfg.AlphaPattern, gu)
		}
		shapes := map[string][]int{l + "base_layer.lora_A.weight": {ne * 8, h}, l + "base_layer.lora_B.weight": {2 * inter, 8 * ne},
			l + "lora_A.weight": {ne * 4, inter}, l + "lora_B.weight": {h, 4 * ne}}
		for k, want := range shapes {
			if !slices.Equal(file[k].shape, want) {
				t.Fatalf("%s: shape %v, want %v", k, file[k].shape, want)
			}
		}
		for e := range ne {
			gateUp := peftDelta(file[l+"base_layer.lora_A.weight"], file[l+"base_layer.lora_B.weight"], ne, e, 16.0/8)
			down := peftDelta(file[l+"lora_A.weight"], file[l+"lora_B.weight"], ne, e, 8.0/4)
			want := append(expertUpdate(t, a, layer, e, model.ProjGate), expertUpdate(t, a, layer, e, model.ProjUp)...)
			for _, cmp := range []struct{ got, want [][]float64 }{{gateUp, want}, {down, expertUpdate(t, a, layer, e, model.ProjDown)}} {
				for o := range cmp.want {
					for i := range cmp.want[o] {
						if d := math.Abs(cmp.got[o][i] - cmp.want[o][i]); d > 1e-7 {
							t.Fatalf("layer %d expert %d: the file's update differs from grpo's at [%d][%d] by %g", layer, e, o, i, d)
						}
					}
				}
			}
		}
	}
	b, err := Load(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	pa, pb := a.Params(), b.Params()
	if len(pa) != len(pb) {
		t.Fatalf("%d params saved, %d loaded", len(pa), len(pb))
	}
	for i := range pa {
		va, vb := download(m.Backend, pa[i].Value), download(m.Backend, pb[i].Value)
		if pa[i].Name != pb[i].Name || pa[i].Shape != pb[i].Shape || !slices.EqualFunc(va, vb, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }) {
			t.Fatalf("param %d: %s %v saved, %s %v loaded (values equal: %v)", i, pa[i].Name, pa[i].Shape, pb[i].Name, pb[i].Shape, slices.Equal(va, vb))
		}
	}
}

// writeFused writes a PEFT-style fused-experts adapter for m: random A
// and B of rank r for the given Parameters of every layer, keys as PEFT
// nests them, and cfg merged into the config.
func writeFused(t *testing.T, c *model.Config, params []string, r int, cfg map[string]any) (string, map[string]fileTensor) {
	rng := rand.New(rand.NewPCG(11, 3))
	var ts []safetensors.Tensor
	file := map[string]fileTensor{}
	for layer := range c.NumLayers {
		for _, param := range params {
			in, out := paramDims(c, param)
			for _, mat := range []struct {
				which string
				shape []int
			}{{"A", []int{c.NumExperts * r, in}}, {"B", []int{out, r * c.NumExperts}}} {
				v := make([]float32, mat.shape[0]*mat.shape[1])
				for i := range v {
					v[i] = float32(rng.NormFloat64() * 0.1)
				}
				key := fusedKey(c, layer, param, mat.which, len(params) == 2)
				tt, _ := safetensors.NewF32(key, mat.shape, v)
				ts = append(ts, tt)
				file[key] = fileTensor{shape: mat.shape, vals: v}
			}
		}
	}
	dir := t.TempDir()
	if err := safetensors.Write(filepath.Join(dir, WeightsFileName), ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	base := map[string]any{"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r, "lora_alpha": 2 * r, "target_modules": nil}
	for k, v := range cfg {
		base[k] = v
	}
	raw, _ := json.Marshal(base)
	os.WriteFile(filepath.Join(dir, ConfigFileName), raw, 0o644)
	return dir, file
}

// TestFusedExpertsForeign: fused adapters as PEFT writes them (no grpo
// metadata) load onto the tiny Qwen3.5-MoE, and merging them gives the
// checkpoint's experts plus PEFT's update, for both Parameters, either
// alone, and without target_parameters.
func TestFusedExpertsForeign(t *testing.T) {
	base, _ := readTensors(t, filepath.Join(root, "testdata", "models", "qwen3_5-moe-tiny", "model.safetensors"))
	for _, tc := range []struct {
		name   string
		params []string
		cfg    map[string]any
	}{
		{"both", fusedParams, map[string]any{"target_parameters": []string{"mlp.experts.gate_up_proj", "mlp.experts.down_proj"}}},
		{"gate_up alone", []string{gateUpParam}, map[string]any{"target_parameters": []string{"experts.gate_up_proj"}}},
		{"down alone, inferred", []string{downParam}, nil},
		{"both, inferred", fusedParams, nil},
		{"pattern", fusedParams, map[string]any{"target_parameters": []string{"mlp.experts.gate_up_proj", "mlp.experts.down_proj"},
			"r": 2, "lora_alpha": 4, "rank_pattern": map[string]int{`.*\.gate_up_proj`: 3, "down_proj": 3}, "alpha_pattern": map[string]float64{`.*\.gate_up_proj`: 9}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := loadModel(t, "qwen3_5-moe-tiny")
			c := m.Config
			dir, file := writeFused(t, c, tc.params, 3, tc.cfg)
			a, err := Load(dir, m)
			if err != nil {
				t.Fatal(err)
			}
			if err := Merge(m, a); err != nil {
				t.Fatal(err)
			}
			ne, inter := c.NumExperts, c.MoEIntermediateSize
			for layer := range c.NumLayers {
				for _, param := range tc.params {
					scale := 6.0 / 3 // lora_alpha 2r over r
					if tc.name == "pattern" {
						scale = map[string]float64{gateUpParam: 9.0 / 3, downParam: 4.0 / 3}[param]
					}
					A := file[fusedKey(c, layer, param, "A", len(tc.params) == 2)]
					B := file[fusedKey(c, layer, param, "B", len(tc.params) == 2)]
					W := base[fusedParamName(c, layer, param)]
					in, out := paramDims(c, param)
					for e := range ne {
						d := peftDelta(A, B, ne, e, scale)
						worst := 0.0
						for o := range out {
							p, row := model.ProjDown, o
							if param == gateUpParam {
								p = model.ProjGate
								if o >= inter {
									p, row = model.ProjUp, o-inter
								}
							}
							got := download(m.Backend, expertWeightOf(&m.W.Layers[layer], e, p))
							for i := range in {
								want := float64(W.vals[(e*out+o)*in+i]) + d[o][i]
								worst = math.Max(worst, math.Abs(want-float64(got[row*in+i])))
							}
						}
						if worst > 1e-6 {
							t.Fatalf("layer %d expert %d %s: merged weight off by %g", layer, e, param, worst)
						}
					}
				}
			}
		})
	}
}

// TestFusedExpertsRefused: what the fused form cannot mean is an error
// naming the problem.
func TestFusedExpertsRefused(t *testing.T) {
	m := loadModel(t, "qwen3_5-moe-tiny")
	c := m.Config
	both := map[string]any{"target_parameters": []string{"mlp.experts.gate_up_proj", "mlp.experts.down_proj"}}
	for _, tc := range []struct {
		name, want string
		edit       func(dir string)
		cfg        map[string]any
	}{
		{"unknown parameter", "names no parameter grpo adapts", nil, map[string]any{"target_parameters": []string{"mlp.experts.w13"}}},
		{"missing down", "is missing", func(dir string) { dropTensors(t, dir, ".mlp.experts.lora_") }, both},
		{"per-expert beside fused", "also holds fused", func(dir string) {
			addTensor(t, dir, pref+"0.mlp.experts.3.gate_proj.lora_A.weight", []int{3, c.HiddenSize})
		}, both},
		{"wrong rank", "want [40 32]", nil, map[string]any{"target_parameters": both["target_parameters"], "rank_pattern": map[string]int{"down_proj": 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := writeFused(t, c, fusedParams, 3, tc.cfg)
			if tc.edit != nil {
				tc.edit(dir)
			}
			_, err := Load(dir, m)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// grpo's own file, its gate rows given a value in up's columns.
	a, _ := New(m, Config{Rank: 2, Alpha: 4, TargetModules: []string{"gate_proj", "up_proj"}}, 1)
	dir := filepath.Join(t.TempDir(), "a")
	if err := Save(dir, a, "x"); err != nil {
		t.Fatal(err)
	}
	rewriteTensors(t, dir, func(ts []safetensors.Tensor) []safetensors.Tensor {
		for i, x := range ts {
			if x.Name == pref+"1.mlp.experts.base_layer.lora_B.weight" {
				v, _ := x.Float32s()
				v[3*c.NumExperts+1] = 0.5 // row 0 (gate), rank column 3 (up's), expert 1
				ts[i], _ = safetensors.NewF32(x.Name, x.Shape, v)
			}
		}
		return ts
	})
	if _, err := Load(dir, m); err == nil || !strings.Contains(err.Error(), "not block diagonal") {
		t.Errorf("tampered fused B: %v", err)
	}
	if _, err := New(m, Config{Rank: 2, Alpha: 4, TargetModules: []string{"gate", "q_proj"}}, 1); err == nil || !strings.Contains(err.Error(), "not a linear module") {
		t.Errorf("routers on Qwen3.5-MoE: %v", err)
	}
}

// rewriteTensors rewrites an adapter's weights file through edit.
func rewriteTensors(t *testing.T, dir string, edit func([]safetensors.Tensor) []safetensors.Tensor) {
	path := filepath.Join(dir, WeightsFileName)
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, n := range f.Names() {
		tt, _ := f.Tensor(n)
		v, _ := tt.Float32s()
		c, _ := safetensors.NewF32(n, tt.Shape, v)
		ts = append(ts, c)
	}
	meta := f.Metadata()
	f.Close()
	if err := safetensors.Write(path, edit(ts), meta); err != nil {
		t.Fatal(err)
	}
}

func dropTensors(t *testing.T, dir, substr string) {
	rewriteTensors(t, dir, func(ts []safetensors.Tensor) []safetensors.Tensor {
		return slices.DeleteFunc(ts, func(x safetensors.Tensor) bool { return strings.Contains(x.Name, substr) })
	})
}

func addTensor(t *testing.T, dir, name string, shape []int) {
	rewriteTensors(t, dir, func(ts []safetensors.Tensor) []safetensors.Tensor {
		x, _ := safetensors.NewF32(name, shape, make([]float32, shape[0]*shape[1]))
		return append(ts, x)
	})
}

// TestFusedExpertsScales: experts whose rank and alpha differ from the
// adapter's (a PEFT file with patterns) are saved so that both readers
// get grpo's update: PEFT by the file's rank_pattern/alpha_pattern, vLLM
// by lora_alpha/r alone; and load back to the same pairs.
func TestFusedExpertsScales(t *testing.T) {
	m := loadModel(t, "qwen3_5-moe-tiny")
	c := m.Config
	src, _ := writeFused(t, c, fusedParams, 3, map[string]any{"target_parameters": []string{"mlp.experts.gate_up_proj", "mlp.experts.down_proj"},
		"r": 2, "lora_alpha": 4, "rank_pattern": map[string]int{`.*\.gate_up_proj`: 3, "down_proj": 3}, "alpha_pattern": map[string]float64{`.*\.gate_up_proj`: 9}})
	a, err := Load(src, m)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "a")
	if err := Save(dir, a, "x"); err != nil {
		t.Fatal(err)
	}
	file, _ := readTensors(t, filepath.Join(dir, WeightsFileName))
	var cfg struct {
		R            int                `json:"r"`
		Alpha        float64            `json:"lora_alpha"`
		RankPattern  map[string]int     `json:"rank_pattern"`
		AlphaPattern map[string]float64 `json:"alpha_pattern"`
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ConfigFileName))
	json.Unmarshal(raw, &cfg)
	vllmScale := cfg.Alpha / float64(cfg.R)
	ne := c.NumExperts
	for layer := range c.NumLayers {
		l := pref + strconv.Itoa(layer) + ".mlp.experts."
		for _, x := range []struct {
			param, key string
			want       func(e int) [][]float64
		}{
			{gateUpParam, l + "base_layer.", func(e int) [][]float64 {
				return append(expertUpdate(t, a, layer, e, model.ProjGate), expertUpdate(t, a, layer, e, model.ProjUp)...)
			}},
			{downParam, l, func(e int) [][]float64 { return expertUpdate(t, a, layer, e, model.ProjDown) }},
		} {
			name := fusedParamName(c, layer, x.param)
			alpha, rank := cfg.Alpha, cfg.R // PEFT: the pattern's, else the adapter's
			if v, ok := cfg.AlphaPattern[name]; ok {
				alpha = v
			}
			if v, ok := cfg.RankPattern[name]; ok {
				rank = v
			}
			peftScale := alpha / float64(rank)
			if math.Abs(peftScale-vllmScale) > 1e-12 {
				t.Fatalf("%s: PEFT's scale %g (patterns %v %v), vLLM's %g", name, peftScale, cfg.RankPattern, cfg.AlphaPattern, vllmScale)
			}
			for e := range ne {
				got, want := peftDelta(file[x.key+"lora_A.weight"], file[x.key+"lora_B.weight"], ne, e, peftScale), x.want(e)
				for o := range want {
					for i := range want[o] {
						if d := math.Abs(got[o][i] - want[o][i]); d > 1e-6 {
							t.Fatalf("%s expert %d: the file's update differs from grpo's by %g", name, e, d)
						}
					}
				}
			}
		}
	}
	b, err := Load(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	for layer := range c.NumLayers {
		for _, p := range []model.Proj{model.ProjGate, model.ProjUp, model.ProjDown} {
			ra, aa, _ := a.ExpertModule(layer, p)
			rb, ab, _ := b.ExpertModule(layer, p)
			la, lb := a.ExpertLoRA(layer, p), b.ExpertLoRA(layer, p)
			if ra != rb || aa != ab || maxAbsDiff(download(m.Backend, la.A), download(m.Backend, lb.A)) != 0 || maxAbsDiff(download(m.Backend, la.B), download(m.Backend, lb.B)) > 1e-7 {
				t.Fatalf("layer %d %s: rank/alpha %d/%g saved, %d/%g loaded, or values differ", layer, p, ra, aa, rb, ab)
			}
		}
	}
}

// TestFusedExpertsLogits: on the tiny Qwen3.5-MoE, an adapter on every
// expert gives the same logits applied, saved in the fused form and
// loaded back, and merged; so does a fused adapter grpo did not write.
func TestFusedExpertsLogits(t *testing.T) {
	tokens := []int32{5, 77, 301, 9, 140, 2, 411, 63, 7, 250}
	m := loadModel(t, "qwen3_5-moe-tiny")
	a, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: AllModules}, 3)
	if err != nil {
		t.Fatal(err)
	}
	nonZeroB(t, m, a, 5)
	base := logits(t, m, tokens)
	applied := logits(t, m.WithAdapter(a), tokens)
	if d := maxAbsDiff(base, applied); d < 0.05 {
		t.Fatalf("the adapter moves the logits by only %g", d)
	}
	dir := filepath.Join(t.TempDir(), "a")
	if err := Save(dir, a, "x"); err != nil {
		t.Fatal(err)
	}
	b, err := Load(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(logits(t, m.WithAdapter(b), tokens), applied); d != 0 {
		t.Errorf("reloaded adapter: logits differ by %g", d)
	}
	foreign, _ := writeFused(t, m.Config, fusedParams, 3, nil)
	for _, c := range []struct {
		name string
		dir  string
	}{{"grpo's", dir}, {"foreign", foreign}} {
		mm := loadModel(t, "qwen3_5-moe-tiny")
		ad, err := Load(c.dir, mm)
		if err != nil {
			t.Fatal(err)
		}
		want := logits(t, mm.WithAdapter(ad), tokens)
		if err := Merge(mm, ad); err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(logits(t, mm, tokens), want); d > 1e-4 {
			t.Errorf("%s: merged model vs adapter: logits differ by %g", c.name, d)
		}
	}
}
