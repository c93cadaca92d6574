package lora

import (
	"fmt"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// fileTensors are an adapter file's LoRA matrices, sorted by what they
// adapt.
type fileTensors struct {
	dense   [][model.NumProj]pair
	experts map[[3]int]*pair // by (layer, proj, expert)
	routers []pair
	fused   []fusedPair
}

// fusedPair is a layer's fused-experts matrices (experts_fused.go): the
// outer …mlp.experts.lora_* and the inner …mlp.experts.base_layer.lora_*.
type fusedPair struct{ outer, inner pair }

func (fp fusedPair) any() bool {
	return first(fp.outer.a, fp.outer.b, fp.inner.a, fp.inner.b) != nil
}

// collect reads every tensor name of f, checks it names a matrix of a
// module this model has, and files it.
func collect(c *model.Config, f *safetensors.File, wPath string) (*fileTensors, error) {
	ft := &fileTensors{dense: make([][model.NumProj]pair, c.NumLayers), experts: map[[3]int]*pair{},
		routers: make([]pair, c.NumLayers), fused: make([]fusedPair, c.NumLayers)}
	prefix := layersPrefix(c)
	for _, name := range f.Names() {
		k, ok := parseKey(name, prefix)
		if !ok {
			return nil, fmt.Errorf("%s: tensor %q is not a LoRA matrix of a decoder-layer projection (want names like base_model.model.%s0.self_attn.q_proj.lora_A.weight, …mlp.experts.0.gate_proj.lora_A.weight for an expert, or …mlp.experts.lora_A.weight for fused experts); grpo adapts the projections of %s layers: %v", wPath, name, prefix, c.ModelType, projNames(c))
		}
		if k.layer >= c.NumLayers {
			return nil, fmt.Errorf("%s: tensor %q is for layer %d but the model has %d layers (num_hidden_layers); was the adapter trained on a different model?", wPath, name, k.layer, c.NumLayers)
		}
		sparse := !k.router && k.fused == "" && isExpertProj(c, k.layer, k.proj)
		switch {
		case (k.router || k.fused != "") && !c.IsSparse(k.layer):
			return nil, fmt.Errorf("%s: tensor %q adapts a mixture-of-experts layer's router or experts, but layer %d of this model (%s) has none; was the adapter trained on a different model?", wPath, name, k.layer, c.ModelType)
		case k.router || k.fused != "":
		case k.expert >= 0 && !sparse:
			return nil, fmt.Errorf("%s: tensor %q adapts an expert, but layer %d of this model (%s) has no experts; was the adapter trained on a different model?", wPath, name, k.layer, c.ModelType)
		case k.expert < 0 && sparse:
			return nil, fmt.Errorf("%s: tensor %q adapts a dense %s, but layer %d of this model is a mixture-of-experts layer, whose adapters are per expert (%s) or fused (%s); was the adapter trained on a different model?", wPath, name, k.proj, k.layer, expertModuleName(c, k.layer, 0, k.proj), fusedParamName(c, k.layer, gateUpParam))
		case k.expert >= c.NumExperts:
			return nil, fmt.Errorf("%s: tensor %q is for expert %d but the model has %d experts (num_experts); was the adapter trained on a different model?", wPath, name, k.expert, c.NumExperts)
		}
		t, _ := f.Tensor(name)
		slot := ft.slot(k)
		if *slot != nil {
			return nil, fmt.Errorf("%s: tensors %q and %q hold the same matrix", wPath, (*slot).Name, name)
		}
		*slot = &t
	}
	return ft, nil
}

// slot is where the matrix k names goes.
func (ft *fileTensors) slot(k tensorKey) **safetensors.Tensor {
	pr := &ft.dense[k.layer][k.proj]
	switch {
	case k.router:
		pr = &ft.routers[k.layer]
	case k.fused == "outer":
		pr = &ft.fused[k.layer].outer
	case k.fused == "inner":
		pr = &ft.fused[k.layer].inner
	case k.expert >= 0:
		key := [3]int{k.layer, int(k.proj), k.expert}
		if ft.experts[key] == nil {
			ft.experts[key] = &pair{}
		}
		pr = ft.experts[key]
	}
	if k.which == "B" {
		return &pr.b
	}
	return &pr.a
}
