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

// FromBytes is Load over the contents of dir's two files, read by the
// caller: grpo serve reads them with size caps and a timeout away from the
// goroutine that owns the backend, so a FIFO or /dev/zero named as an
// adapter cannot stall or bloat the server. dir only labels errors.
func FromBytes(dir string, config, weights []byte, m *model.Model) (*Adapter, error) {
	cfgPath := filepath.Join(dir, ConfigFileName)
	pc, err := parsePEFTConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", cfgPath, err)
	}
	wPath := filepath.Join(dir, WeightsFileName)
	f, err := safetensors.Parse(wPath, weights)
	if err != nil {
		return nil, err
	}
	return build(m, pc, f, wPath)
}

// pair is one module's lora_A and lora_B tensors as found in a file.
type pair struct{ a, b *safetensors.Tensor }

// build validates the tensors of f against pc and m and uploads them.
func build(m *model.Model, pc *peftConfig, f *safetensors.File, wPath string) (*Adapter, error) {
	c := m.Config
	found := make([][model.NumProj]pair, c.NumLayers)
	foundE := map[[3]int]*pair{} // by (layer, proj, expert)
	foundR := make([]pair, c.NumLayers)
	for _, name := range f.Names() {
		k, ok := parseKey(name)
		if !ok {
			return nil, fmt.Errorf("%s: tensor %q is not a LoRA matrix of a decoder-layer projection (want names like base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight, or …mlp.experts.0.gate_proj.lora_A.weight for an expert); grpo adapts only q/k/v/o and gate/up/down projections", wPath, name)
		}
		if k.layer >= c.NumLayers {
			return nil, fmt.Errorf("%s: tensor %q is for layer %d but the model has %d layers (num_hidden_layers); was the adapter trained on a different model?", wPath, name, k.layer, c.NumLayers)
		}
		sparse := isExpertProj(c, k.layer, k.proj)
		switch {
		case k.router && !c.IsSparse(k.layer):
			return nil, fmt.Errorf("%s: tensor %q adapts a router, but layer %d of this model (%s) has none; was the adapter trained on a different model?", wPath, name, k.layer, c.ModelType)
		case k.router:
		case k.expert >= 0 && !sparse:
			return nil, fmt.Errorf("%s: tensor %q adapts an expert, but layer %d of this model (%s) has no experts; was the adapter trained on a different model?", wPath, name, k.layer, c.ModelType)
		case k.expert < 0 && sparse:
			return nil, fmt.Errorf("%s: tensor %q adapts a dense %s, but layer %d of this model is a mixture-of-experts layer, whose adapters are per expert (model.layers.%d.mlp.experts.{e}.%s); was the adapter trained on a different model?", wPath, name, k.proj, k.layer, k.layer, k.proj)
		case k.expert >= c.NumExperts:
			return nil, fmt.Errorf("%s: tensor %q is for expert %d but the model has %d experts (num_experts); was the adapter trained on a different model?", wPath, name, k.expert, c.NumExperts)
		}
		t, _ := f.Tensor(name)
		pr := &found[k.layer][k.proj]
		if k.router {
			pr = &foundR[k.layer]
		}
		if k.expert >= 0 {
			key := [3]int{k.layer, int(k.proj), k.expert}
			if foundE[key] == nil {
				foundE[key] = &pair{}
			}
			pr = foundE[key]
		}
		slot := &pr.a
		if k.which == "B" {
			slot = &pr.b
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
			if !c.HasProj(layer, p) {
				continue
			}
			if isExpertProj(c, layer, p) {
				var err error
				if w[p], err = pc.wantExperts(wPath, c, layer, p, foundE); err != nil {
					return nil, err
				}
			} else {
				mod := moduleName(layer, p)
				if pc.targets == nil {
					w[p] = found[layer][p].a != nil || found[layer][p].b != nil
				} else {
					w[p] = pc.targets.match(mod) && !pc.exclude.match(mod)
				}
			}
			anyWanted = anyWanted || w[p]
		}
		want = append(want, w)
		r := foundR[layer].a != nil || foundR[layer].b != nil
		if pc.targets != nil {
			r = c.IsSparse(layer) && pc.targets.match(routerModuleName(layer))
		}
		anyWanted = anyWanted || r
	}
	if !anyWanted {
		if pc.targets == nil {
			return nil, fmt.Errorf("%s: holds no LoRA tensors", wPath)
		}
		return nil, fmt.Errorf("%s: target_modules %s selects none of the model's projections (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj)", filepath.Join(filepath.Dir(wPath), ConfigFileName), pc.targets.text)
	}

	a := newAdapter(m, Config{Rank: pc.rank, Alpha: pc.alpha, UseRSLoRA: pc.rsLoRA, Dropout: pc.dropout})
	var adapted [model.NumProj]bool
	routers, err := pc.addRouters(a, wPath, c, foundR)
	if err != nil {
		a.Free()
		return nil, err
	}
	if routers {
		a.Config.TargetModules = append(a.Config.TargetModules, model.RouterModule)
	}
	for layer := range c.NumLayers {
		for p := range model.NumProj {
			if !c.HasProj(layer, p) {
				if got := found[layer][p]; first(got.a, got.b) != nil {
					a.Free()
					return nil, fmt.Errorf("%s: tensor %q adapts %s, which layer %d of this model (%s) does not have; was the adapter trained on a different model?", wPath, first(got.a, got.b).Name, moduleName(layer, p), layer, c.ModelType)
				}
				continue
			}
			if isExpertProj(c, layer, p) {
				if !want[layer][p] {
					for e := range c.NumExperts {
						if got := foundE[[3]int{layer, int(p), e}]; got != nil {
							a.Free()
							return nil, fmt.Errorf("%s: tensor %q adapts %s, which target_modules %s does not select", wPath, first(got.a, got.b).Name, expertModuleName(layer, e, p), pc.targets.text)
						}
					}
					continue
				}
				if err := pc.addExperts(a, wPath, c, layer, p, foundE); err != nil {
					a.Free()
					return nil, err
				}
				adapted[p] = true
				continue
			}
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
	in, out := c.Dims(p)
	return pc.moduleValues(wPath, moduleName(layer, p), peftKey(layer, p, "A"), peftKey(layer, p, "B"), p.String(), in, out, ta, tb)
}

// addRouters adds the router adapters target_modules selects (or, when
// it is null, the file holds) and reports whether there were any.
func (pc *peftConfig) addRouters(a *Adapter, wPath string, c *model.Config, foundR []pair) (bool, error) {
	any := false
	for layer := range c.NumLayers {
		got := foundR[layer]
		mod := routerModuleName(layer)
		want := got.a != nil || got.b != nil
		if pc.targets != nil {
			want = c.IsSparse(layer) && pc.targets.match(mod) && !pc.exclude.match(mod)
			if t := first(got.a, got.b); !want && t != nil {
				return false, fmt.Errorf("%s: tensor %q adapts %s, which target_modules %s does not select", wPath, t.Name, mod, pc.targets.text)
			}
		}
		if !want {
			continue
		}
		in, out := routerDims(c)
		av, bv, rank, alpha, err := pc.moduleValues(wPath, mod, routerKey(layer, "A"), routerKey(layer, "B"), "the router (mlp.gate)", in, out, got.a, got.b)
		if err != nil {
			return false, err
		}
		a.addRouter(layer, rank, alpha, av, bv)
		any = true
	}
	return any, nil
}

// wantExperts reports whether the adapter adapts projection p of layer's
// experts: all of them or none, as grpo stacks them.
func (pc *peftConfig) wantExperts(wPath string, c *model.Config, layer int, p model.Proj, foundE map[[3]int]*pair) (bool, error) {
	n := 0
	for e := range c.NumExperts {
		mod := expertModuleName(layer, e, p)
		if pc.targets == nil {
			if foundE[[3]int{layer, int(p), e}] != nil {
				n++
			}
		} else if pc.targets.match(mod) && !pc.exclude.match(mod) {
			n++
		}
	}
	if n != 0 && n != c.NumExperts {
		return false, fmt.Errorf("%s: adapts %s on %d of layer %d's %d experts; grpo adapts a projection on every expert of a layer or none (it stacks their adapters), so select all of them or none", wPath, p, n, layer, c.NumExperts)
	}
	return n > 0, nil
}

// addExperts checks and uploads every expert's pair of projection p of
// layer; they must share one rank and alpha.
func (pc *peftConfig) addExperts(a *Adapter, wPath string, c *model.Config, layer int, p model.Proj, foundE map[[3]int]*pair) error {
	in, out := c.ExpertDims(p)
	var avs, bvs [][]float32
	rank0, alpha0 := 0, 0.0
	for e := range c.NumExperts {
		got := foundE[[3]int{layer, int(p), e}]
		if got == nil {
			got = &pair{}
		}
		av, bv, rank, alpha, err := pc.moduleValues(wPath, expertModuleName(layer, e, p), expertKey(layer, e, p, "A"), expertKey(layer, e, p, "B"), "an expert's "+p.String(), in, out, got.a, got.b)
		if err != nil {
			return err
		}
		if e > 0 && (rank != rank0 || alpha != alpha0) {
			return fmt.Errorf("%s: %s has rank %d and alpha %g but expert 0's has %d and %g; grpo needs one rank and alpha for all experts of a layer (check rank_pattern and alpha_pattern)", wPath, expertModuleName(layer, e, p), rank, alpha, rank0, alpha0)
		}
		rank0, alpha0 = rank, alpha
		avs, bvs = append(avs, av), append(bvs, bv)
	}
	a.addExperts(layer, p, rank0, alpha0, avs, bvs)
	return nil
}

// moduleValues is values for the module mod with PEFT keys keyA and keyB.
func (pc *peftConfig) moduleValues(wPath, mod, keyA, keyB string, what string, in, out int, ta, tb *safetensors.Tensor) (av, bv []float32, rank int, alpha float64, err error) {
	if ta == nil || tb == nil {
		missing := keyA
		if ta != nil {
			missing = keyB
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
	for _, t := range []struct {
		t    *safetensors.Tensor
		want []int
		dims string
	}{{ta, []int{rank, in}, "[rank, in_features]"}, {tb, []int{out, rank}, "[out_features, rank]"}} {
		if len(t.t.Shape) != 2 || t.t.Shape[0] != t.want[0] || t.t.Shape[1] != t.want[1] {
			return nil, nil, 0, 0, fmt.Errorf("%s: tensor %q has shape %v, want %v %s (%s; %s of this model is %d → %d)", wPath, t.t.Name, t.t.Shape, t.want, t.dims, rankFrom, what, in, out)
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
