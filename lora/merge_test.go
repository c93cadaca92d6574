package lora

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

var mergeTokens = []int32{1, 40, 7, 300, 511, 2, 99, 123, 64}

// TestMergeInMemory: the merged base model computes what base + adapter
// did, to float32 rounding.
func TestMergeInMemory(t *testing.T) {
	for _, name := range []string{"qwen3-tiny", "qwen2-tiny"} {
		t.Run(name, func(t *testing.T) {
			m := loadModel(t, name)
			a, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: AllModules, UseRSLoRA: name == "qwen2-tiny"}, 5)
			if err != nil {
				t.Fatal(err)
			}
			checkMerge(t, m, a)
		})
	}
}

// checkMerge merges a (its B matrices filled by fillB) into m and checks
// that the merged model computes what m with a did, to float32 rounding
// (max |Δ| of the logits ≤ 1e-5), and that the adapter changed them (by
// 0.01 at least).
func checkMerge(t *testing.T, m *model.Model, a *Adapter) {
	t.Helper()
	fillB(m, a)
	want := logits(t, m.WithAdapter(a), mergeTokens)
	base := logits(t, m, mergeTokens)
	if err := Merge(m, a); err != nil {
		t.Fatal(err)
	}
	got := logits(t, m, mergeTokens)
	if d := maxAbsDiff(got, want); d > 1e-5 {
		t.Fatalf("merged vs adapter: max |Δ| %g > 1e-5", d)
	}
	if d := maxAbsDiff(got, base); d < 0.01 {
		t.Fatalf("merge changed the logits by only %g", d)
	}
}

// paramNames are a's parameters' names, in order.
func paramNames(a *Adapter) []string {
	var names []string
	for _, p := range a.Params() {
		names = append(names, p.Name)
	}
	return names
}

func fillB(m *model.Model, a *Adapter) {
	for i, p := range a.Params() {
		if i%2 == 1 {
			v := make([]float32, p.Value.Len())
			for j := range v {
				v[j] = float32(math.Sin(float64(j*7+i))) * 0.05
			}
			m.Backend.Upload(p.Value, v)
		}
	}
}

// TestWriteMergedF32: the merged directory loads as a plain model whose
// logits are those of base + adapter; config.json is copied unchanged.
func TestWriteMergedF32(t *testing.T) {
	src := filepath.Join(root, "testdata", "models", "qwen3-tiny")
	m := loadModel(t, "qwen3-tiny")
	a := newOursAdapter(t, m)
	out := filepath.Join(t.TempDir(), "merged")
	if err := WriteMerged(out, src, a); err != nil {
		t.Fatal(err)
	}
	mm, err := model.Load(out, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(logits(t, mm, mergeTokens), logits(t, m.WithAdapter(a), mergeTokens)); d > 1e-5 {
		t.Fatalf("merged model vs adapter: max |Δ| %g > 1e-5", d)
	}
	c1, _ := os.ReadFile(filepath.Join(src, "config.json"))
	c2, _ := os.ReadFile(filepath.Join(out, "config.json"))
	if !bytes.Equal(c1, c2) {
		t.Error("config.json not copied verbatim")
	}
	if err := WriteMerged(out, src, a); err == nil || !strings.Contains(err.Error(), "exists and is not empty") {
		t.Errorf("overwriting a non-empty --out: %v", err)
	}
	if err := WriteMerged(src, src, a); err == nil || !strings.Contains(err.Error(), "model directory itself") {
		t.Errorf("writing over the source: %v", err)
	}
	if err := WriteMerged(filepath.Join(t.TempDir(), "x"), filepath.Join(root, "testdata", "models", "llama-tiny"), a); err == nil || !strings.Contains(err.Error(), "another model") {
		t.Errorf("merging into a model of another shape: %v", err)
	}
}

// TestWriteMergedBF16Sharded: a BF16 sharded model stays BF16 in the same
// shards; untouched tensors are copied bit for bit and every merged value
// is the bf16 nearest to W + scale·B·A (checked against both neighbours).
func TestWriteMergedBF16Sharded(t *testing.T) {
	src := filepath.Join(root, "testdata", "models", "llama-tiny-bf16-sharded")
	m := loadModel(t, "llama-tiny-bf16-sharded")
	a, _ := New(m, Config{Rank: 3, Alpha: 6, TargetModules: []string{"o_proj", "up_proj"}}, 11)
	fillB(m, a)
	out := filepath.Join(t.TempDir(), "merged")
	if err := WriteMerged(out, src, a); err != nil {
		t.Fatal(err)
	}
	i1, _ := os.ReadFile(filepath.Join(src, safetensors.IndexFileName))
	i2, _ := os.ReadFile(filepath.Join(out, safetensors.IndexFileName))
	if !bytes.Equal(i1, i2) {
		t.Error("index not copied verbatim")
	}
	files, _ := weightFiles(src)
	merged := 0
	for _, name := range files {
		fs, err := safetensors.Open(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		fo, err := safetensors.Open(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(fs.Names(), ",") != strings.Join(fo.Names(), ",") {
			t.Fatalf("%s: tensors %v became %v", name, fs.Names(), fo.Names())
		}
		for _, tn := range fs.Names() {
			ts, _ := fs.Tensor(tn)
			to, _ := fo.Tensor(tn)
			if to.DType != ts.DType {
				t.Fatalf("%s: dtype %s became %s", tn, ts.DType, to.DType)
			}
			aw, adapted := a.adaptedWeight(tn)
			if !adapted {
				if !bytes.Equal(ts.Bytes(), to.Bytes()) {
					t.Errorf("%s: unadapted tensor changed", tn)
				}
				continue
			}
			merged++
			checkNearestBF16(t, a, ts, to, aw.layer, aw.proj)
		}
		fs.Close()
		fo.Close()
	}
	if merged != 2*m.Config.NumLayers {
		t.Errorf("merged %d tensors, want %d", merged, 2*m.Config.NumLayers)
	}
	// And the merged model runs: within bf16 rounding of the adapter's logits.
	mm, err := model.Load(out, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(logits(t, mm, mergeTokens), logits(t, m.WithAdapter(a), mergeTokens)); d > 0.05 {
		t.Errorf("merged bf16 model vs adapter: max |Δ| %g", d)
	}
}

// checkNearestBF16 recomputes W + scale·B·A with a loop order of its own
// (k innermost) and checks each stored bf16 is a nearest one.
func checkNearestBF16(t *testing.T, a *Adapter, src, got safetensors.Tensor, layer int, p model.Proj) {
	t.Helper()
	w, _ := src.Float32s()
	bits, _ := got.BF16Bits()
	mod := a.mods[layer][p]
	av, bv := a.download(mod.l.A), a.download(mod.l.B)
	in, out := a.cfg.Dims(p)
	scale := mod.alpha / float64(mod.rank)
	for o := range out {
		for i := range in {
			s := 0.0
			for k := range mod.rank {
				s += float64(bv[o*mod.rank+k]) * float64(av[k*in+i])
			}
			exact := float64(w[o*in+i]) + scale*s
			b := bits[o*in+i]
			here := float64(safetensors.BF16ToF32(b))
			for _, nb := range []uint16{b - 1, b + 1} {
				if d := float64(safetensors.BF16ToF32(nb)); math.Abs(d-exact) < math.Abs(here-exact) {
					t.Fatalf("%s[%d,%d]: stored %v but %v is nearer to %v", src.Name, o, i, here, d, exact)
				}
			}
		}
	}
}

func TestRoundBF16(t *testing.T) {
	const half = 1.00390625 // exactly between bf16 1.0 (0x3f80) and 1.0078125 (0x3f81)
	for _, c := range []struct {
		v    float64
		want uint16
	}{
		{1, 0x3f80},
		{half, 0x3f80},                   // tie → even
		{half + 1e-12, 0x3f81},           // float32(v) is the tie, v is above it
		{half - 1e-12, 0x3f80},           // below it
		{-(half + 1e-12), 0xbf81},        // sign-symmetric
		{1.0078125 + 0.00390625, 0x3f82}, // tie between 0x3f81 and 0x3f82 → even
		{0, 0},
	} {
		if got := roundBF16(c.v); got != c.want {
			t.Errorf("roundBF16(%.17g) = %#04x, want %#04x", c.v, got, c.want)
		}
	}
}
