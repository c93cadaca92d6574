package lora

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// Load reads a PEFT LoRA adapter directory (adapter_config.json and
// adapter_model.safetensors, as PEFT's save_pretrained and grpo's Save
// write them) for the model m, onto m's Backend. Tensors may be F32, F16 or
// BF16; rank_pattern and alpha_pattern are honoured per module. Every
// tensor is checked against m's dimensions and the rank the config gives
// it; a problem is one error line naming the file, the key and the fix.
func Load(dir string, m *model.Model) (*Adapter, error) {
	cfgPath := filepath.Join(dir, ConfigFileName)
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: not found; a LoRA adapter directory holds %s and %s (PEFT format)", cfgPath, ConfigFileName, WeightsFileName)
		}
		return nil, err
	}
	pc, err := parsePEFTConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", cfgPath, err)
	}
	wPath := filepath.Join(dir, WeightsFileName)
	if _, err := os.Stat(wPath); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, "adapter_model.bin")); err == nil {
			return nil, fmt.Errorf("%s: holds adapter_model.bin (a PyTorch pickle), which grpo does not read; re-save the adapter with safe_serialization=True", dir)
		}
		return nil, fmt.Errorf("%s: not found; the adapter's weights belong next to %s", wPath, ConfigFileName)
	}
	f, err := safetensors.Open(wPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := build(m, pc, f, wPath)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// build validates the tensors of f against pc and m and uploads them.
func build(m *model.Model, pc *peftConfig, f *safetensors.File, wPath string) (*Adapter, error) {
	c := m.Config
	type pair struct{ a, b *safetensors.Tensor }
	found := make([][model.NumProj]pair, c.NumLayers)
	for _, name := range f.Names() {
		k, ok := parseKey(name)
		if !ok {
			return nil, fmt.Errorf("%s: tensor %q is not a LoRA matrix of a decoder-layer projection (want names like base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight); grpo adapts only q/k/v/o and gate/up/down projections", wPath, name)
		}
		if k.layer >= c.NumLayers {
			return nil, fmt.Errorf("%s: tensor %q is for layer %d but the model has %d layers (num_hidden_layers); was the adapter trained on a different model?", wPath, name, k.layer, c.NumLayers)
		}
		t, _ := f.Tensor(name)
		slot := &found[k.layer][k.proj].a
		if k.which == "B" {
			slot = &found[k.layer][k.proj].b
		}
		if *slot != nil {
			return nil, fmt.Errorf("%s: tensors %q and %q hold the same matrix", wPath, (*slot).Name, name)
		}
		*slot = &t
	}
	// Which modules are adapted: those target_modules selects (minus
	// exclude_modules), or when it is null, those the file holds.
	var want [][model.NumProj]bool
	anyWanted := false
	for layer := range c.NumLayers {
		var w [model.NumProj]bool
		for p := range model.NumProj {
			mod := moduleName(layer, p)
			if pc.targets == nil {
				w[p] = found[layer][p].a != nil || found[layer][p].b != nil
			} else {
				w[p] = pc.targets.match(mod) && !pc.exclude.match(mod)
			}
			anyWanted = anyWanted || w[p]
		}
		want = append(want, w)
	}
	if !anyWanted {
		if pc.targets == nil {
			return nil, fmt.Errorf("%s: holds no LoRA tensors", wPath)
		}
		return nil, fmt.Errorf("%s: target_modules %s selects none of the model's projections (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj)", filepath.Join(filepath.Dir(wPath), ConfigFileName), pc.targets.text)
	}

	a := newAdapter(m, Config{Rank: pc.rank, Alpha: pc.alpha, UseRSLoRA: pc.rsLoRA, Dropout: pc.dropout})
	var adapted [model.NumProj]bool
	for layer := range c.NumLayers {
		for p := range model.NumProj {
			got := found[layer][p]
			if !want[layer][p] {
				if t := first(got.a, got.b); t != nil {
					a.Free()
					return nil, fmt.Errorf("%s: tensor %q adapts %s, which target_modules %s does not select", wPath, t.Name, moduleName(layer, p), pc.targets.text)
				}
				continue
			}
			av, bv, rank, alpha, err := pc.values(wPath, c, layer, p, got.a, got.b)
			if err != nil {
				a.Free()
				return nil, err
			}
			a.add(layer, p, rank, alpha, av, bv)
			adapted[p] = true
		}
	}
	for p := range model.NumProj {
		if adapted[p] {
			a.Config.TargetModules = append(a.Config.TargetModules, p.String())
		}
	}
	a.groupA()
	return a, nil
}

func first(ts ...*safetensors.Tensor) *safetensors.Tensor {
	for _, t := range ts {
		if t != nil {
			return t
		}
	}
	return nil
}

// values checks one module's pair against the rank the config gives it and
// the model's dimensions, and converts it to float32.
func (pc *peftConfig) values(wPath string, c *model.Config, layer int, p model.Proj, ta, tb *safetensors.Tensor) (av, bv []float32, rank int, alpha float64, err error) {
	mod := moduleName(layer, p)
	if ta == nil || tb == nil {
		missing := peftKey(layer, p, "A")
		if ta != nil {
			missing = peftKey(layer, p, "B")
		}
		return nil, nil, 0, 0, fmt.Errorf("%s: tensor %q is missing, but adapter_config.json targets %s", wPath, missing, mod)
	}
	rank, alpha = pc.rank, pc.alpha
	rankFrom := fmt.Sprintf("r = %d", rank)
	if v, ok := lookup(pc.rankPattern, mod); ok {
		rank, rankFrom = int(v), fmt.Sprintf("rank_pattern gives %d", int(v))
	}
	if v, ok := lookup(pc.alphaPattern, mod); ok {
		alpha = v
	}
	in, out := c.Dims(p)
	for _, t := range []struct {
		t    *safetensors.Tensor
		want []int
		dims string
	}{{ta, []int{rank, in}, "[rank, in_features]"}, {tb, []int{out, rank}, "[out_features, rank]"}} {
		if len(t.t.Shape) != 2 || t.t.Shape[0] != t.want[0] || t.t.Shape[1] != t.want[1] {
			return nil, nil, 0, 0, fmt.Errorf("%s: tensor %q has shape %v, want %v %s (%s; %s of this model is %d → %d)", wPath, t.t.Name, t.t.Shape, t.want, t.dims, rankFrom, p, in, out)
		}
	}
	if av, err = floats(wPath, ta); err == nil {
		bv, err = floats(wPath, tb)
	}
	return av, bv, rank, alpha, err
}

// floats converts an F32/F16/BF16 tensor, rejecting NaN and Inf (a
// diverged run's adapter would otherwise poison every logit silently).
func floats(wPath string, t *safetensors.Tensor) ([]float32, error) {
	v, err := t.Float32s()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", wPath, err)
	}
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%s: tensor %q holds %v at element %d; the adapter is corrupt or its training diverged", wPath, t.Name, x, i)
		}
	}
	return v, nil
}
