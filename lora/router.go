package lora

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// Router adapters. Target module "gate" adapts the router (mlp.gate, a
// linear map hidden → num_experts) of every mixture-of-experts layer, as
// PEFT does (its suffix match of "gate" finds only the routers; the
// experts' projections are gate_proj). Without it the routers are frozen.

// routerKey is the PEFT key of layer's router LoRA matrix.
func routerKey(c *model.Config, layer int, which string) string {
	return matrixKey(routerModuleName(c, layer), which)
}

func routerModuleName(c *model.Config, layer int) string {
	return fmt.Sprintf("%s%d.mlp.%s", layersPrefix(c), layer, model.RouterModule)
}

// routerDims are the router's (in, out).
func routerDims(c *model.Config) (in, out int) { return c.HiddenSize, c.NumExperts }

// addRouter uploads layer's router pair with zeroed gradients.
func (a *Adapter) addRouter(layer, rank int, alpha float64, av, bv []float32) {
	in, out := routerDims(a.cfg)
	up := func(v []float32) kernels.Buffer {
		b := a.be.Alloc(kernels.F32, len(v))
		a.be.Upload(b, v)
		return b
	}
	l := &model.LoRA{A: up(av), B: up(bv), DA: a.be.Alloc(kernels.F32, rank*in), DB: a.be.Alloc(kernels.F32, out*rank),
		Rank: rank, Scale: scaleOf(alpha, rank, a.Config.UseRSLoRA)}
	if a.routers == nil {
		a.routers = make([]*module, len(a.mods))
	}
	a.routers[layer] = &module{rank: rank, alpha: alpha, l: l}
	a.params = append(a.params,
		Param{Name: routerKey(a.cfg, layer, "A"), Layer: layer, Expert: -1, Router: true, Value: l.A, Grad: l.DA, Shape: [2]int{rank, in}},
		Param{Name: routerKey(a.cfg, layer, "B"), Layer: layer, Expert: -1, Router: true, Value: l.B, Grad: l.DB, Shape: [2]int{out, rank}})
}

// RouterLoRA implements model.RouterAdapter: layer's router adapter, or
// nil.
func (a *Adapter) RouterLoRA(layer int) *model.LoRA {
	if layer < 0 || layer >= len(a.routers) || a.routers[layer] == nil {
		return nil
	}
	return a.routers[layer].l
}

// addRouterDelta adds scale·B·A of layer's router adapter to w (nExperts
// × hidden).
func (a *Adapter) addRouterDelta(w []float64, layer int) {
	m := a.routers[layer]
	in, out := routerDims(a.cfg)
	scale := m.alpha / float64(m.rank)
	if a.Config.UseRSLoRA {
		scale = m.alpha / math.Sqrt(float64(m.rank))
	}
	addProduct(w, a.download(m.l.A), a.download(m.l.B), in, out, m.rank, scale)
}
