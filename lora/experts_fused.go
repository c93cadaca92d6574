package lora

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// Fused experts: the adapter file layout of routed experts that
// transformers holds as two 3-D Parameters per layer, mlp.experts.
// gate_up_proj [E, 2·I, H] (gate rows first) and down_proj [E, H, I]
// (Qwen3.5-MoE; fusedExperts). PEFT adapts them with target_parameters
// (lora.ParamWrapper, peft/tuners/lora/layer.py) and writes, per layer:
//
//	…mlp.experts.base_layer.lora_A.weight  [E·r, H]    gate_up_proj
//	…mlp.experts.base_layer.lora_B.weight  [2·I, r·E]
//	…mlp.experts.lora_A.weight             [E·r, I]    down_proj
//	…mlp.experts.lora_B.weight             [H, r·E]
//
// — a ParamWrapper wraps the module, one per Parameter, nested in the
// order transformers registers them, so gate_up_proj's is the inner one
// (base_layer); a lone targeted Parameter's is the outer one. Expert e's
// update is scale·B_e·A_e with A_e = rows e·r … e·r+r−1 of A and B_e =
// columns k·E+e (k < r) of B (ParamWrapper.get_delta_weight reshapes A to
// (E, r, in) and B to (out, r, E)). One rank-r A per expert serves both
// halves of gate_up_proj. vLLM reads exactly this (is_3d_moe_weight:
// LoRAModelManager._stack_moe_lora_weights) and needs both Parameters.
//
// grpo trains gate_proj, up_proj and down_proj of every expert as
// separate pairs (experts.go). Save writes gate and up as one
// gate_up_proj pair of rank r_gate + r_up whose B is block diagonal —
// A_e = [A_gate,e; A_up,e], B_e = [[B_gate,e, 0], [0, B_up,e]] — the same
// update, the same fusion PEFT applies when it converts a per-expert
// adapter (peft/utils/transformers_weight_conversion.py, PeftConcatenate).
// A Parameter none of whose projections is adapted is written as a zero
// pair of rank r, since vLLM requires both. The safetensors metadata
// records the split (fusedMetaKey) so Load gives back grpo's own pairs
// bit for bit; any other fused adapter loads as gate = (A, B[:I]), up =
// (A, B[I:]), down = (A, B): the same update.

// The experts' Parameters, in transformers' registration order.
const (
	gateUpParam = "gate_up_proj"
	downParam   = "down_proj"
)

var fusedParams = []string{gateUpParam, downParam}

// fusedMetaKey is the safetensors metadata entry naming, per layer and
// Parameter, the projections (in order) and their rank and alpha.
const fusedMetaKey = "grpo.fused_experts"

// fusedPart is one projection inside a fused Parameter.
type fusedPart struct {
	Proj  string  `json:"proj"`
	Rank  int     `json:"rank"`
	Alpha float64 `json:"alpha"`
}

// fusedMeta is fusedMetaKey's value: layer → Parameter → parts.
type fusedMeta map[string]map[string][]fusedPart

// paramProjs are the projections a Parameter holds, in row order.
func paramProjs(param string) []model.Proj {
	if param == gateUpParam {
		return []model.Proj{model.ProjGate, model.ProjUp}
	}
	return []model.Proj{model.ProjDown}
}

// paramRow is the row of a Parameter's per-expert update (its out index:
// lora_B's row) that holds row o of projection p: gate_up_proj holds its
// gate rows then its up rows, or in gpt-oss's (GptOssExperts) gate j at
// 2j and up j at 2j+1, which its lora_B's rows follow too.
func paramRow(c *model.Config, p model.Proj, o int) int {
	switch {
	case p == model.ProjDown:
		return o
	case c.Arch().GptOssExperts && p == model.ProjGate:
		return 2 * o
	case c.Arch().GptOssExperts:
		return 2*o + 1
	case p == model.ProjUp:
		return c.MoEIntermediateSize + o
	}
	return o
}

// paramDims are a Parameter's per-expert (in, out).
func paramDims(c *model.Config, param string) (in, out int) {
	if param == gateUpParam {
		return c.HiddenSize, 2 * c.MoEIntermediateSize
	}
	return c.MoEIntermediateSize, c.HiddenSize
}

// fusedParamName is a Parameter's name in the HF model, what
// target_parameters and the patterns match.
func fusedParamName(c *model.Config, layer int, param string) string {
	return fmt.Sprintf("%s%d.mlp.experts.%s", layersPrefix(c), layer, param)
}

// fusedKey is the key of a Parameter's lora_A or lora_B when both are
// adapted (gate_up_proj inner, down_proj outer) or, alone, outer.
func fusedKey(c *model.Config, layer int, param, which string, both bool) string {
	mod := fmt.Sprintf("%s%d.mlp.experts", layersPrefix(c), layer)
	if both && param == gateUpParam {
		mod += ".base_layer"
	}
	return matrixKey(mod, which)
}

// fusedLayers lists the layers whose experts Save writes fused.
func (a *Adapter) fusedLayers() []int {
	if !fusedExperts(a.cfg) {
		return nil
	}
	var out []int
	for layer := range a.experts {
		for _, m := range a.experts[layer] {
			if m != nil {
				out = append(out, layer)
				break
			}
		}
	}
	return out
}

// fusedTensors builds the fused pairs of every fused layer, their ranks
// by Parameter name (for rank_pattern) and the metadata entry, of the
// adapter whose experts shards hold: a itself, or an expert-parallel
// group's ranks' adapters (a the first), each holding its experts, in
// order (SaveShards).
func (a *Adapter) fusedTensors(shards []*Adapter) ([]safetensors.Tensor, map[string]int, string, error) {
	var out []safetensors.Tensor
	ranks := map[string]int{}
	meta := fusedMeta{}
	for _, layer := range a.fusedLayers() {
		meta[fmt.Sprint(layer)] = map[string][]fusedPart{}
		for _, param := range fusedParams {
			av, bv, parts, rank := a.fuse(shards, layer, param)
			meta[fmt.Sprint(layer)][param] = parts
			ranks[fusedParamName(a.cfg, layer, param)] = rank
			in, o := paramDims(a.cfg, param)
			ne := a.cfg.NumExperts
			ta, err := safetensors.NewF32(fusedKey(a.cfg, layer, param, "A", true), []int{ne * rank, in}, av)
			if err != nil {
				return nil, nil, "", err
			}
			tb, err := safetensors.NewF32(fusedKey(a.cfg, layer, param, "B", true), []int{o, rank * ne}, bv)
			if err != nil {
				return nil, nil, "", err
			}
			out = append(out, ta, tb)
		}
	}
	js, err := json.Marshal(meta)
	return out, ranks, string(js), err
}

// fuse lays out one Parameter's pair from the adapted projections it
// holds: their ranks summed (r of zeros when none is adapted), each B
// rescaled from its own scale to the adapter-wide one, which is what vLLM
// applies to every module (it reads neither rank_pattern nor
// alpha_pattern; configJSON sets PEFT's to the same scale). The
// experts' values are the shards', end to end.
func (a *Adapter) fuse(shards []*Adapter, layer int, param string) (av, bv []float32, parts []fusedPart, rank int) {
	for _, p := range paramProjs(param) {
		if m := a.experts[layer][p]; m != nil {
			parts = append(parts, fusedPart{Proj: p.String(), Rank: m.rank, Alpha: m.alpha})
			rank += m.rank
		}
	}
	if rank == 0 {
		rank = a.Config.Rank
	}
	ne := a.cfg.NumExperts
	in, out := paramDims(a.cfg, param)
	av, bv = make([]float32, ne*rank*in), make([]float32, out*rank*ne)
	off := 0 // rank offset of the part
	for _, p := range paramProjs(param) {
		m := a.experts[layer][p]
		if m == nil {
			continue
		}
		_, pout := a.cfg.ExpertDims(p)
		r := m.rank
		ratio := float64(scaleOf(m.alpha, r, a.Config.UseRSLoRA)) / float64(a.Config.Scale())
		var pa, pb []float32
		for _, sh := range shards {
			l := sh.experts[layer][p].l
			pa, pb = append(pa, sh.download(l.A)...), append(pb, sh.download(l.B)...)
		}
		for e := range ne {
			copy(av[(e*rank+off)*in:(e*rank+off+r)*in], pa[e*r*in:(e+1)*r*in])
			for o := range pout {
				for k := range r {
					v := pb[e*pout*r+o*r+k]
					if ratio != 1 {
						v = float32(float64(v) * ratio)
					}
					bv[paramRow(a.cfg, p, o)*rank*ne+(off+k)*ne+e] = v
				}
			}
		}
		off += r
	}
	return av, bv, parts, rank
}

// fusedAlpha is the alpha_pattern value that makes PEFT's scale of a
// Parameter of rank r the adapter-wide scale vLLM uses.
func (a *Adapter) fusedAlpha(r int) float64 {
	c := a.Config
	if c.UseRSLoRA {
		return c.Alpha * math.Sqrt(float64(r)/float64(c.Rank))
	}
	return c.Alpha * float64(r) / float64(c.Rank)
}
