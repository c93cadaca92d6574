package lora

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/internal/atomicfile"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// WriteMerged writes a Hugging Face model directory at outDir holding the
// model of modelDir with a merged into its weights. Weights are read from
// modelDir's files (not from a loaded model, whose buffers a backend may
// have widened), so every tensor keeps its dtype and file: unadapted
// tensors are copied bit for bit, adapted ones become W + scale·B·A
// computed in float64 and rounded to nearest even into the source dtype. A
// sharded model stays sharded the same way. Every other regular file
// (config.json, tokenizer files, generation_config.json, …) is copied.
// outDir must not exist or be empty; it is written atomically.
func WriteMerged(outDir, modelDir string, a *Adapter) error {
	cfg, err := model.LoadConfig(modelDir)
	if err != nil {
		return err
	}
	if err := a.compatible(cfg); err != nil {
		return fmt.Errorf("%s: %v", modelDir, err)
	}
	if same(outDir, modelDir) {
		return fmt.Errorf("--out %s is the model directory itself; write the merged model somewhere else", outDir)
	}
	set, err := safetensors.OpenDir(modelDir) // validates the index and every shard
	if err != nil {
		return err
	}
	defer set.Close()
	files, err := weightFiles(modelDir)
	if err != nil {
		return err
	}
	merged := map[string]bool{}
	return atomicfile.WriteDir(outDir, emptyDir, func(tmp string) error {
		for _, name := range files {
			if err := a.mergeFile(filepath.Join(tmp, name), filepath.Join(modelDir, name), merged); err != nil {
				return err
			}
		}
		for _, w := range a.adaptedWeights() {
			if n := a.weightName(w); !merged[n] && !(w.expert >= 0 && merged[a.fusedWeightName(w)]) {
				return fmt.Errorf("%s: has no tensor %q to merge the adapter into", modelDir, n)
			}
		}
		return copyOtherFiles(tmp, modelDir)
	})
}

// mergeFile rewrites one safetensors file with the adapted tensors merged.
func (a *Adapter) mergeFile(dst, src string, merged map[string]bool) error {
	f, err := safetensors.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	var out []safetensors.Tensor
	for _, name := range f.Names() {
		t, _ := f.Tensor(name)
		if err := a.refuseMXFP4(name); err != nil {
			return fmt.Errorf("%s: %v", src, err)
		}
		if w, ok := a.adaptedWeight(name); ok {
			if t, err = a.mergeTensor(t, w); err != nil {
				return fmt.Errorf("%s: %v", src, err)
			}
			merged[name] = true
		} else if layer, param, ok := a.fusedWeight(name); ok {
			if t, err = a.mergeFused(t, layer, param); err != nil {
				return fmt.Errorf("%s: %v", src, err)
			}
			merged[name] = true
		}
		out = append(out, t)
	}
	return safetensors.Write(dst, out, f.Metadata())
}

// adaptedWeight is one base weight an adapter changes: a projection of a
// layer, or of one expert (expert ≥ 0) of a mixture-of-experts layer.
type adaptedWeight struct {
	layer, expert int
	proj          model.Proj
	router        bool
}

// weightName is the checkpoint tensor w.
func (a *Adapter) weightName(w adaptedWeight) string {
	if w.router {
		return routerModuleName(a.cfg, w.layer) + ".weight"
	}
	if w.expert >= 0 {
		return expertModuleName(a.cfg, w.layer, w.expert, w.proj) + ".weight"
	}
	return moduleName(a.cfg, w.layer, w.proj) + ".weight"
}

// adaptedWeights lists every base weight the adapter changes.
func (a *Adapter) adaptedWeights() []adaptedWeight {
	var out []adaptedWeight
	for layer := range a.mods {
		if a.RouterLoRA(layer) != nil {
			out = append(out, adaptedWeight{layer: layer, expert: -1, router: true})
		}
		for p, m := range a.mods[layer] {
			if m != nil {
				out = append(out, adaptedWeight{layer, -1, model.Proj(p), false})
			}
		}
		if layer < len(a.experts) {
			for p, m := range a.experts[layer] {
				for e := 0; m != nil && e < a.cfg.NumExperts; e++ {
					out = append(out, adaptedWeight{layer, e, model.Proj(p), false})
				}
			}
		}
	}
	return out
}

// adaptedWeight reports whether name is the weight of an adapted module.
func (a *Adapter) adaptedWeight(name string) (adaptedWeight, bool) {
	for _, w := range a.adaptedWeights() {
		if a.weightName(w) == name {
			return w, true
		}
	}
	return adaptedWeight{}, false
}

func (a *Adapter) mergeTensor(t safetensors.Tensor, aw adaptedWeight) (safetensors.Tensor, error) {
	in, out := a.cfg.Dims(aw.proj)
	switch {
	case aw.router:
		in, out = routerDims(a.cfg)
	case aw.expert >= 0:
		in, out = a.cfg.ExpertDims(aw.proj)
	}
	if len(t.Shape) != 2 || t.Shape[0] != out || t.Shape[1] != in {
		return t, fmt.Errorf("tensor %q has shape %v, want [%d %d]", t.Name, t.Shape, out, in)
	}
	w, err := float64s(t)
	if err != nil {
		return t, err
	}
	switch {
	case aw.router:
		a.addRouterDelta(w, aw.layer)
	case aw.expert >= 0:
		a.addExpertDelta(w, aw.layer, aw.expert, aw.proj)
	default:
		a.addDelta(w, aw.layer, aw.proj)
	}
	return encodeLike(t, w)
}

func float64s(t safetensors.Tensor) ([]float64, error) {
	vals, err := t.Float32s()
	if err != nil {
		return nil, err
	}
	w := make([]float64, len(vals))
	for i, v := range vals {
		w[i] = float64(v)
	}
	return w, nil
}

// encodeLike stores w in t's dtype, rounding to nearest even.
func encodeLike(t safetensors.Tensor, w []float64) (safetensors.Tensor, error) {
	switch t.DType {
	case safetensors.BF16:
		b := make([]byte, 2*len(w))
		for i, v := range w {
			bits := roundBF16(v)
			b[2*i], b[2*i+1] = byte(bits), byte(bits>>8)
		}
		return safetensors.NewTensor(t.Name, t.DType, t.Shape, b)
	case safetensors.F16:
		// float64 → float32 → f16 could round twice only when the float32
		// lands exactly halfway between two f16 values, which a sum of
		// products practically never does.
		f := make([]float32, len(w))
		for i, v := range w {
			f[i] = float32(v)
		}
		return safetensors.NewF16(t.Name, t.Shape, f)
	default:
		f := make([]float32, len(w))
		for i, v := range w {
			f[i] = float32(v)
		}
		return safetensors.NewF32(t.Name, t.Shape, f)
	}
}

// roundBF16 rounds v to the nearest bfloat16, ties to even, in one step:
// rounding to float32 first and then to bf16 would be wrong when the
// float32 lands exactly halfway between two bf16 values but v does not.
func roundBF16(v float64) uint16 {
	f := float32(v)
	bits := math.Float32bits(f)
	if bits&0xffff == 0x8000 && float64(f) != v && !math.IsInf(float64(f), 0) && !math.IsNaN(v) {
		down := bits &^ 0xffff // toward zero
		if math.Abs(v) > math.Abs(float64(f)) {
			return uint16(down>>16) + 1
		}
		return uint16(down >> 16)
	}
	return safetensors.F32ToBF16(f)
}

// weightFiles lists the model's safetensors files: the shards the index
// names, or model.safetensors.
func weightFiles(dir string) ([]string, error) {
	idx := filepath.Join(dir, safetensors.IndexFileName)
	data, err := os.ReadFile(idx)
	if os.IsNotExist(err) {
		return []string{safetensors.SingleFileName}, nil
	}
	if err != nil {
		return nil, err
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &index); err != nil {
		return nil, fmt.Errorf("%s: %v", idx, err)
	}
	seen := map[string]bool{}
	var files []string
	for _, f := range index.WeightMap {
		if !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	sort.Strings(files)
	return files, nil
}

// copyOtherFiles copies every regular, non-hidden file of src that is not
// a safetensors weight file (config.json, the index, tokenizer files, …),
// following symlinks as a Hugging Face cache snapshot has them.
func copyOtherFiles(dst, src string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".safetensors") {
			continue
		}
		st, err := os.Stat(filepath.Join(src, name))
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if err := atomicfile.CopyFile(filepath.Join(dst, name), filepath.Join(src, name)); err != nil {
			return err
		}
	}
	return nil
}

// emptyDir allows writing over an existing directory only if it is empty.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s: exists and is not empty; choose a new output directory or remove it first", dir)
	}
	return nil
}

func same(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
