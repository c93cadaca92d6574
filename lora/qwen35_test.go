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
