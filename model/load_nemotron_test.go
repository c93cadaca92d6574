package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// TestNemotronTransformersLayout: nemotron_h-tiny rewritten in
// transformers' current NemotronHForCausalLM layout — model.* instead of
// backbone.*, each MoE layer's experts as the 3-D
// mixer.experts.up_proj [E, inter, hidden] and down_proj [E, hidden,
// inter] Parameters — loads and gives bit-identical logits to the
// published layout; so does nemotron_h-latent-tiny, whose 3-D experts
// are latent wide ([E, inter, latent] and [E, latent, inter]).
func TestNemotronTransformersLayout(t *testing.T) {
	for _, name := range []string{"nemotron_h-tiny", "nemotron_h-latent-tiny"} {
		t.Run(name, func(t *testing.T) { checkNemotronTransformersLayout(t, name) })
	}
}

func checkNemotronTransformersLayout(t *testing.T, name string) {
	src := filepath.Join("..", "testdata", "models", name)
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]safetensors.Tensor{}
	stacked := map[string][][]byte{} // 3-D name -> per-expert data, by expert
	shapes := map[string][]int{}
	for _, name := range f.Names() {
		tn, _ := f.Tensor(name)
		name = strings.Replace(name, "backbone.", "model.", 1)
		if i := strings.Index(name, ".experts."); i >= 0 {
			var e int
			var proj string
			if _, err := fmt.Sscanf(name[i+len(".experts."):], "%d.%s", &e, &proj); err != nil {
				t.Fatal(err)
			}
			whole := name[:i] + ".experts." + strings.TrimSuffix(proj, ".weight")
			for len(stacked[whole]) <= e {
				stacked[whole] = append(stacked[whole], nil)
			}
			stacked[whole][e] = tn.Bytes()
			shapes[whole] = tn.Shape
			continue
		}
		out[name] = tn
	}
	dir := t.TempDir()
	type entry struct {
		DType   string `json:"dtype"`
		Shape   []int  `json:"shape"`
		Offsets [2]int `json:"data_offsets"`
	}
	header := map[string]entry{}
	var data []byte
	add := func(name, dtype string, shape []int, b []byte) {
		header[name] = entry{dtype, shape, [2]int{len(data), len(data) + len(b)}}
		data = append(data, b...)
	}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(n, "F32", out[n].Shape, out[n].Bytes())
	}
	for whole, parts := range stacked {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		add(whole, "F32", append([]int{len(parts)}, shapes[whole]...), b)
	}
	h, _ := json.Marshal(header)
	var file []byte
	file = binary.LittleEndian.AppendUint64(file, uint64(len(h)))
	file = append(append(file, h...), data...)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(src, "config.json"))
	os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644)
	tokens := []int32{1, 40, 7, 300, 511, 2, 99, 123, 64}
	logits := func(d string) []float32 {
		m, err := Load(d, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		var b Batch
		b.Add(0, 0, tokens...)
		l, err := m.Logits(m.NewKVCache(1, len(tokens)), &b, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	want, got := logits(src), logits(dir)
	if d := maxAbsDiff(got, want); d != 0 {
		t.Errorf("transformers' layout: logits differ by %g from the published layout's", d)
	}
	if len(stacked) != 2 {
		t.Errorf("%d 3-D expert tensors written, want 2", len(stacked))
	}
}
