package lora

import (
	"fmt"
	"strings"

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

// mergeFused adds every adapted expert's update to its rows of t
// ([E, out, in]), or for gpt-oss to its columns of t ([E, in, out], gate
// and up interleaved: paramRow).
func (a *Adapter) mergeFused(t safetensors.Tensor, layer int, param string) (safetensors.Tensor, error) {
	ne := a.cfg.NumExperts
	in, out := paramDims(a.cfg, param)
	want := []int{ne, out, in}
	oss := a.cfg.Arch().GptOssExperts
	if oss {
		want = []int{ne, in, out}
	}
	if len(t.Shape) != 3 || t.Shape[0] != want[0] || t.Shape[1] != want[1] || t.Shape[2] != want[2] {
		return t, fmt.Errorf("tensor %q has shape %v, want %v", t.Name, t.Shape, want)
	}
	w, err := float64s(t)
	if err != nil {
		return t, err
	}
	for _, p := range paramProjs(param) {
		if a.experts[layer][p] == nil {
			continue
		}
		_, pout := a.cfg.ExpertDims(p)
		for e := range ne {
			delta := make([]float64, pout*in) // pout × in, as addExpertDelta adds
			a.addExpertDelta(delta, layer, e, p)
			for o := range pout {
				row := paramRow(a.cfg, p, o)
				for i := range in {
					if oss {
						w[(e*in+i)*out+row] += delta[o*in+i]
					} else {
						w[(e*out+row)*in+i] += delta[o*in+i]
					}
				}
			}
		}
	}
	return encodeLike(t, w)
}

// refuseMXFP4 returns an error when name is the MXFP4 blocks of an
// adapted expert Parameter (gpt-oss's published checkpoints): merging
// would requantize the experts to MXFP4, losing most of the update, so
// WriteMerged refuses rather than write bf16 experts into a checkpoint
// whose config.json says mxfp4.
func (a *Adapter) refuseMXFP4(name string) error {
	stem, ok := strings.CutSuffix(name, "_blocks")
	if !ok {
		return nil
	}
	if _, _, adapted := a.fusedWeight(stem); !adapted {
		return nil
	}
	return fmt.Errorf("tensor %q: the adapter adapts these experts, which the checkpoint stores in MXFP4; grpo does not merge into MXFP4 weights (requantizing would lose most of the update): merge into a bf16 checkpoint of the model, or serve the adapter unmerged", name)
}
