package lora

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// Load reads a PEFT LoRA adapter directory (adapter_config.json and
// adapter_model.safetensors, as PEFT's save_pretrained and grpo's Save
// write them) for the model m, onto m's Backend. Tensors may be F32, F16 or
// BF16; rank_pattern and alpha_pattern are honoured per module. Every
// tensor is checked against m's dimensions and the rank the config gives
// it; a problem is one error line naming the file, the key and the fix.
// On an expert-parallel rank's model (model.LoadExperts) every expert's
// tensors are checked and the rank's experts' kept: an adapter of the
// whole model, as Save or SaveShards wrote it, loads onto each rank.
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
	ft, err := collect(c, f, wPath)
	if err != nil {
		return nil, err
	}
	found, foundE, foundR := ft.dense, ft.experts, ft.routers
	fusedAt, err := pc.fusedLayers(wPath, c, ft)
	if err != nil {
		return nil, err
	}
	// Which modules are adapted: those target_modules selects (minus
	// exclude_modules), or when it is null, those the file holds. A layer
	// whose experts the file holds fused takes them from there; where the
	// experts are no modules of the HF model (fusedExperts), target_modules
	// cannot select them and the file's per-expert tensors say.
	var want [][model.NumProj]bool
	anyWanted := false
	for layer := range c.NumLayers {
		var w [model.NumProj]bool
		for p := range model.NumProj {
			if !c.HasProj(layer, p) {
				continue
			}
			if isExpertProj(c, layer, p) {
				if fusedAt[layer] {
					continue
				}
				var err error
				if w[p], err = pc.wantExperts(wPath, c, layer, p, foundE, pc.targets == nil || fusedExperts(c)); err != nil {
					return nil, err
				}
			} else {
				mod := moduleName(c, layer, p)
				if pc.targets == nil {
					w[p] = found[layer][p].a != nil || found[layer][p].b != nil
				} else {
					w[p] = pc.targets.match(mod) && !pc.exclude.match(mod)
				}
			}
			anyWanted = anyWanted || w[p]
		}
		want = append(want, w)
		anyWanted = anyWanted || fusedAt[layer] || pc.wantRouter(c, layer, foundR[layer])
	}
	if !anyWanted {
		if pc.targets == nil {
			return nil, fmt.Errorf("%s: holds no LoRA tensors", wPath)
		}
		return nil, fmt.Errorf("%s: target_modules %s selects none of the model's projections (%s)", filepath.Join(filepath.Dir(wPath), ConfigFileName), pc.targets.text, strings.Join(projNames(c), ", "))
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
		var unfused map[model.Proj]*expertPairs
		if fusedAt[layer] {
			if unfused, err = pc.unfuse(wPath, c, layer, ft.fused[layer], f.Metadata()[fusedMetaKey]); err != nil {
				a.Free()
				return nil, err
			}
		}
		for p := range model.NumProj {
			if !c.HasProj(layer, p) {
				if got := found[layer][p]; first(got.a, got.b) != nil {
					a.Free()
					return nil, fmt.Errorf("%s: tensor %q adapts %s, which layer %d of this model (%s) does not have; was the adapter trained on a different model?", wPath, first(got.a, got.b).Name, moduleName(c, layer, p), layer, c.ModelType)
				}
				continue
			}
			if isExpertProj(c, layer, p) {
				if ep := unfused[p]; ep != nil {
					a.addHeldExperts(layer, p, ep.rank, ep.alpha, ep.a, ep.b)
					adapted[p] = true
				}
				if fusedAt[layer] {
					continue
				}
				if !want[layer][p] {
					for e := range c.NumExperts {
						if got := foundE[[3]int{layer, int(p), e}]; got != nil {
							a.Free()
							return nil, fmt.Errorf("%s: tensor %q adapts %s, which target_modules %s does not select", wPath, first(got.a, got.b).Name, expertModuleName(c, layer, e, p), pc.targets.text)
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
					return nil, fmt.Errorf("%s: tensor %q adapts %s, which target_modules %s does not select", wPath, t.Name, moduleName(c, layer, p), pc.targets.text)
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
		// gate_proj, up_proj and down_proj name both the MLP's and the
		// shared expert's: listed once.
		if adapted[p] && !slices.Contains(a.Config.TargetModules, p.String()) {
			a.Config.TargetModules = append(a.Config.TargetModules, p.String())
		}
	}
	a.groupA()
	return a, nil
}

// projNames lists the projection names of the model's layers, for
// messages.
func projNames(c *model.Config) []string {
	var out []string
	for p := range model.NumProj {
		if c.HasProjAnywhere(p) && !slices.Contains(out, p.String()) {
			out = append(out, p.String())
		}
	}
	return out
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
	return pc.moduleValues(wPath, moduleName(c, layer, p), peftKey(c, layer, p, "A"), peftKey(c, layer, p, "B"), p.String(), in, out, ta, tb)
}

// addRouters adds the router adapters target_modules selects (or, when
// it is null, the file holds) and reports whether there were any.
func (pc *peftConfig) addRouters(a *Adapter, wPath string, c *model.Config, foundR []pair) (bool, error) {
	any := false
	for layer := range c.NumLayers {
		got := foundR[layer]
		mod := routerModuleName(c, layer)
		want := pc.wantRouter(c, layer, got)
		if t := first(got.a, got.b); t != nil && fusedExperts(c) {
			return false, fmt.Errorf("%s: tensor %q adapts a router, which in a %s model is not a linear module (transformers' Qwen3_5MoeTopKRouter): PEFT cannot build it and grpo does not adapt it", wPath, t.Name, c.ModelType)
		}
		if t := first(got.a, got.b); !want && t != nil {
			return false, fmt.Errorf("%s: tensor %q adapts %s, which target_modules %s does not select", wPath, t.Name, mod, pc.targets.text)
		}
		if !want {
			continue
		}
		in, out := routerDims(c)
		av, bv, rank, alpha, err := pc.moduleValues(wPath, mod, routerKey(c, layer, "A"), routerKey(c, layer, "B"), "the router (mlp.gate)", in, out, got.a, got.b)
		if err != nil {
			return false, err
		}
		a.addRouter(layer, rank, alpha, av, bv)
		any = true
	}
	return any, nil
}

// wantRouter reports whether layer's router is adapted: target_modules
// selects it (never where it is no linear module, fusedExperts), or, when
// null, the file holds it.
func (pc *peftConfig) wantRouter(c *model.Config, layer int, got pair) bool {
	if pc.targets == nil {
		return got.a != nil || got.b != nil
	}
	mod := routerModuleName(c, layer)
	return c.IsSparse(layer) && !fusedExperts(c) && pc.targets.match(mod) && !pc.exclude.match(mod)
}

// wantExperts reports whether the adapter adapts projection p of layer's
// experts: all of them or none, as grpo stacks them; byTensors counts
// those the file holds instead of those target_modules selects.
func (pc *peftConfig) wantExperts(wPath string, c *model.Config, layer int, p model.Proj, foundE map[[3]int]*pair, byTensors bool) (bool, error) {
	n := 0
	for e := range c.NumExperts {
		mod := expertModuleName(c, layer, e, p)
		if byTensors {
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
		av, bv, rank, alpha, err := pc.moduleValues(wPath, expertModuleName(c, layer, e, p), expertKey(c, layer, e, p, "A"), expertKey(c, layer, e, p, "B"), "an expert's "+p.String(), in, out, got.a, got.b)
		if err != nil {
			return err
		}
		if e > 0 && (rank != rank0 || alpha != alpha0) {
			return fmt.Errorf("%s: %s has rank %d and alpha %g but expert 0's has %d and %g; grpo needs one rank and alpha for all experts of a layer (check rank_pattern and alpha_pattern)", wPath, expertModuleName(c, layer, e, p), rank, alpha, rank0, alpha0)
		}
		rank0, alpha0 = rank, alpha
		avs, bvs = append(avs, av), append(bvs, bv)
	}
	a.addHeldExperts(layer, p, rank0, alpha0, avs, bvs)
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
