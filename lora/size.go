package lora

import "github.com/grpo-dev/grpo/model"

// Targets is what TargetModules adapts: its projections, and whether it
// names the mixture-of-experts routers ("gate").
func (c Config) Targets() (projs []model.Proj, routers bool, err error) {
	projs, err = c.projs()
	return projs, c.routers(), err
}

// ParamCount is the trainable parameters New allocates for c on a model
// of shape mc, before anything is allocated (the estimate, the
// performance model): rank × (in + out) for each (A, B) pair — each
// target projection of every layer, once per expert in a sparse layer,
// and with the routers targeted each sparse layer's router.
func (c Config) ParamCount(mc *model.Config) (int64, error) {
	projs, err := c.projs()
	if err != nil {
		return 0, err
	}
	r := int64(c.Rank)
	var n int64
	for layer := range mc.NumLayers {
		if c.routers() && mc.IsSparse(layer) {
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
				in, out = mc.ExpertDims(p)
				copies = int64(mc.NumExperts)
			}
			n += copies * r * int64(in+out)
		}
	}
	return n, nil
}
