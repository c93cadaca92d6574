package lora

import "github.com/grpo-dev/grpo/model"

// Targets is what TargetModules adapts on a model of shape mc: its
// projections (each in the layers that have it), and whether the
// mixture-of-experts routers are adapted ("gate", or "all-linear" on
// Qwen3-MoE).
func (c Config) Targets(mc *model.Config) (projs []model.Proj, routers bool, err error) {
	return c.resolve(mc)
}

// ParamCount is the trainable parameters New allocates for c on a model
// of shape mc, before anything is allocated (the estimate, the
// performance model): rank × (in + out) for each (A, B) pair — each
// target projection of every layer, once per expert in a sparse layer,
// and with the routers targeted each sparse layer's router.
func (c Config) ParamCount(mc *model.Config) (int64, error) {
	projs, routers, err := c.resolve(mc)
	if err != nil {
		return 0, err
	}
	r := int64(c.Rank)
	var n int64
	for layer := range mc.NumLayers {
		if routers && mc.IsSparse(layer) {
			in, out := routerDims(mc)
			n += r * int64(in+out)
		}
		for _, p := range projs {
			if !mc.HasProj(layer, p) {
				continue
			}
			in, out := mc.Dims(p)
			copies := int64(1)
			if isExpertProj(mc, layer, p) {
				if !c.AdaptsExperts(mc) {
					continue
				}
				in, out = mc.ExpertDims(p)
				copies = int64(mc.NumExperts)
			}
			n += copies * r * int64(in+out)
		}
	}
	return n, nil
}
