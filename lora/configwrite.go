package lora

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/model"
)

// configJSON renders adapter_config.json. Modules whose rank or alpha
// differ from the adapter-wide values (an adapter loaded with patterns) get
// rank_pattern / alpha_pattern entries under their full module name, which
// PEFT matches exactly. target_modules lists projection names (PEFT
// matches them as suffixes) when those select exactly the adapted modules
// among the model's, else full module names, so that PEFT creates exactly
// the modules the file has. fusedRanks are the ranks of the fused experts'
// Parameters by name (experts_fused.go), listed in target_parameters.
func (a *Adapter) configJSON(baseModel string, fusedRanks map[string]int) ([]byte, error) {
	c := a.Config
	out := peftConfigFile{
		AlphaPattern: map[string]float64{}, BaseModel: baseModel, Bias: "none", InferenceMode: true, InitLoraWeights: true,
		LoraAlpha: c.Alpha, LoraDropout: c.Dropout, PeftType: "LORA", R: c.Rank, RankPattern: map[string]int{},
		TaskType: "CAUSAL_LM", UseRSLoRA: c.UseRSLoRA,
	}
	pattern := func(name string, rank int, alpha float64) {
		if rank != c.Rank {
			out.RankPattern[name] = rank
		}
		if alpha != c.Alpha {
			out.AlphaPattern[name] = alpha
		}
	}
	var adapted, suffixes []string
	seen := map[string]bool{}
	add := func(suffix string, rank int, alpha float64, names ...string) {
		for _, n := range names {
			pattern(n, rank, alpha)
		}
		adapted = append(adapted, names...)
		if len(names) > 0 && !seen[suffix] {
			seen[suffix] = true
			suffixes = append(suffixes, suffix)
		}
	}
	// Suffixes in the order routers, then q, k, v, o, gate, up, down, …:
	// the order grpo has always written them.
	for layer := range a.routers {
		if m := a.routers[layer]; m != nil {
			add(model.RouterModule, m.rank, m.alpha, routerModuleName(a.cfg, layer))
		}
	}
	for p := range model.NumProj {
		for layer := range a.mods {
			rank, alpha, names := a.moduleNames(layer, p)
			add(p.String(), rank, alpha, names...)
		}
	}
	if selectsExactly(suffixes, a.candidateModules(), adapted) {
		out.TargetModules = suffixes
	} else {
		out.TargetModules = a.layerOrder(adapted)
	}
	out.TargetParameters = a.fusedTargets(fusedRanks)
	for name, r := range fusedRanks {
		pattern(name, r, a.fusedAlpha(r))
	}
	if len(out.TargetModules) == 0 && len(out.TargetParameters) == 0 {
		return nil, fmt.Errorf("the adapter has no modules; nothing to save")
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// candidateModules lists every module of the HF model an adapter could
// name: the projections each layer has, every expert's where the experts
// are modules, and the routers where they are linear modules.
func (a *Adapter) candidateModules() []string {
	c := a.cfg
	var out []string
	for layer := range c.NumLayers {
		if c.IsSparse(layer) && !fusedExperts(c) {
			out = append(out, routerModuleName(c, layer))
		}
		for p := range model.NumProj {
			switch {
			case !c.HasProj(layer, p):
			case isExpertProj(c, layer, p):
				for e := 0; e < c.NumExperts && !fusedExperts(c); e++ {
					out = append(out, expertModuleName(c, layer, e, p))
				}
			default:
				out = append(out, moduleName(c, layer, p))
			}
		}
	}
	return out
}

// selectsExactly reports whether the suffix list, matched as PEFT matches
// target_modules, selects exactly the adapted modules among candidates.
func selectsExactly(suffixes, candidates, adapted []string) bool {
	want := map[string]bool{}
	for _, n := range adapted {
		want[n] = true
	}
	selected := 0
	for _, n := range candidates {
		hit := false
		for _, s := range suffixes {
			hit = hit || strings.HasSuffix(n, "."+s)
		}
		if hit != want[n] {
			return false
		}
		if hit {
			selected++
		}
	}
	return selected == len(want)
}

// layerOrder sorts full module names by layer, keeping the order within
// a layer (router, then projections), as grpo lists them.
func (a *Adapter) layerOrder(names []string) []string {
	byLayer := make([][]string, a.cfg.NumLayers)
	for _, n := range names {
		k, _ := parseKey(matrixKey(n, "A"), layersPrefix(a.cfg))
		byLayer[k.layer] = append(byLayer[k.layer], n)
	}
	var out []string
	for _, ns := range byLayer {
		out = append(out, ns...)
	}
	return out
}

// fusedTargets is target_parameters for the fused Parameters written:
// their names as suffixes when every sparse layer has them, else in full.
func (a *Adapter) fusedTargets(fusedRanks map[string]int) []string {
	if len(fusedRanks) == 0 {
		return nil
	}
	if len(fusedRanks) == len(fusedParams)*a.cfg.SparseLayers() {
		var out []string
		for _, p := range fusedParams {
			out = append(out, "mlp.experts."+p)
		}
		return out
	}
	var out []string
	for _, layer := range a.fusedLayers() {
		for _, p := range fusedParams {
			out = append(out, fusedParamName(a.cfg, layer, p))
		}
	}
	return out
}
