package lora

import (
	"fmt"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// WriteMerged on a checkpoint that stores a layer's experts fused
// (mlp.experts.gate_up_proj [E, 2·I, H], down_proj [E, H, I], as
// Qwen3.5-MoE's do): each adapted expert's update goes into its slice.

// fusedWeight reports whether name is a fused experts tensor of a layer
// with adapted experts, and which.
func (a *Adapter) fusedWeight(name string) (layer int, param string, ok bool) {
	for layer := range a.experts {
		for _, param := range fusedParams {
			if name != fusedParamName(a.cfg, layer, param) {
				continue
			}
			for _, p := range paramProjs(param) {
				if a.experts[layer][p] != nil {
					return layer, param, true
				}
			}
		}
	}
	return 0, "", false
}

// fusedWeightName is the fused tensor that holds expert weight w.
func (a *Adapter) fusedWeightName(w adaptedWeight) string {
	param := gateUpParam
	if w.proj == model.ProjDown {
		param = downParam
	}
	return fusedParamName(a.cfg, w.layer, param)
}

// mergeFused adds every adapted expert's update to its rows of t.
func (a *Adapter) mergeFused(t safetensors.Tensor, layer int, param string) (safetensors.Tensor, error) {
	ne, inter := a.cfg.NumExperts, a.cfg.MoEIntermediateSize
	in, out := paramDims(a.cfg, param)
	if len(t.Shape) != 3 || t.Shape[0] != ne || t.Shape[1] != out || t.Shape[2] != in {
		return t, fmt.Errorf("tensor %q has shape %v, want [%d %d %d]", t.Name, t.Shape, ne, out, in)
	}
	w, err := float64s(t)
	if err != nil {
		return t, err
	}
	for _, p := range paramProjs(param) {
		if a.experts[layer][p] == nil {
			continue
		}
		row := 0
		if p == model.ProjUp {
			row = inter // gate rows first
		}
		_, pout := a.cfg.ExpertDims(p)
		for e := range ne {
			a.addExpertDelta(w[(e*out+row)*in:(e*out+row+pout)*in], layer, e, p)
		}
	}
	return encodeLike(t, w)
}
