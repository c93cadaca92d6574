package lora

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// Expert adapters. In a sparse (mixture-of-experts) layer, target module
// gate_proj, up_proj or down_proj adapts that projection of every expert,
// as PEFT does (its target_modules match names by suffix, and the experts
// are mlp.experts.{e}.gate_proj). Each expert's A and B are PEFT
// parameters of their own (…mlp.experts.{e}.gate_proj.lora_A.weight), but
// are stored stacked — one buffer of every expert's A, one of every B — so
// the model's shrink and expand are one grouped GEMM each
// (model.ExpertLoRA); the parameters are views into the stacks. All of a
// layer's experts share one rank and alpha.

// expertModule is one projection adapted on every expert of a layer.
type expertModule struct {
	rank  int
	alpha float64
	l     *model.ExpertLoRA
}

// expertKey is the PEFT key of expert e's LoRA matrix.
func expertKey(c *model.Config, layer, e int, p model.Proj, which string) string {
	return matrixKey(expertModuleName(c, layer, e, p), which)
}

// expertModuleName is expert e's projection module in the HF model.
// (Nemotron-H's under its layers' mixer.).
func expertModuleName(c *model.Config, layer, e int, p model.Proj) string {
	block := "mlp"
	if c.Arch().Nemotron {
		block = "mixer"
	}
	return fmt.Sprintf("%s%d.%s.experts.%d.%s", layersPrefix(c), layer, block, e, p)
}

// isExpertProj reports whether p of layer is adapted per expert.
func isExpertProj(c *model.Config, layer int, p model.Proj) bool {
	return c.IsSparse(layer) && p.IsMLP()
}

// addExperts uploads the (A, B) pairs of projection p of experts first,
// first+1, … of layer (av[i] rank × in, bv[i] out × rank, for expert
// first+i: every expert, or an expert-parallel rank's, model.LocalExperts)
// into stacked buffers with zeroed gradients, and lists each expert's
// matrices as Params, named by their expert's index in the model.
func (a *Adapter) addExperts(layer int, p model.Proj, rank int, alpha float64, first int, av, bv [][]float32) {
	in, out := a.cfg.ExpertDims(p)
	ne := len(av)
	stack := func(vs [][]float32, n int) kernels.Buffer {
		all := make([]float32, 0, ne*n)
		for _, v := range vs {
			all = append(all, v...)
		}
		b := a.be.Alloc(kernels.F32, ne*n)
		a.be.Upload(b, all)
		return b
	}
	l := &model.ExpertLoRA{A: stack(av, rank*in), B: stack(bv, out*rank),
		DA: a.be.Alloc(kernels.F32, ne*rank*in), DB: a.be.Alloc(kernels.F32, ne*out*rank),
		Rank: rank, Scale: scaleOf(alpha, rank, a.Config.UseRSLoRA)}
	if a.experts == nil {
		a.experts = make([][model.NumProj]*expertModule, len(a.mods))
	}
	a.experts[layer][p] = &expertModule{rank: rank, alpha: alpha, l: l}
	if a.views == nil {
		a.views = map[kernels.Buffer]bool{}
	}
	view := func(b kernels.Buffer, e, n int) kernels.Buffer {
		v := b.Slice(e*n, n)
		a.views[v] = true
		return v
	}
	for i := range ne {
		e := first + i
		a.params = append(a.params,
			Param{Name: expertKey(a.cfg, layer, e, p, "A"), Layer: layer, Proj: p, Expert: e,
				Value: view(l.A, i, rank*in), Grad: view(l.DA, i, rank*in), Shape: [2]int{rank, in}},
			Param{Name: expertKey(a.cfg, layer, e, p, "B"), Layer: layer, Proj: p, Expert: e,
				Value: view(l.B, i, out*rank), Grad: view(l.DB, i, out*rank), Shape: [2]int{out, rank}})
	}
}

// addHeldExperts is addExperts for pairs read from an adapter file,
// av[e] and bv[e] expert e's of every expert: it keeps those of the
// experts the adapter holds, all of them or, on an expert-parallel rank's
// model, its share (the inverse of SaveShards' gather).
func (a *Adapter) addHeldExperts(layer int, p model.Proj, rank int, alpha float64, av, bv [][]float32) {
	first, n := a.held.first, a.held.n
	a.addExperts(layer, p, rank, alpha, first, av[first:first+n], bv[first:first+n])
}

// ExpertLoRA implements model.ExpertAdapter: the stacked adapter of
// projection p of layer's experts, or nil.
func (a *Adapter) ExpertLoRA(layer int, p model.Proj) *model.ExpertLoRA {
	if layer < 0 || layer >= len(a.experts) || p >= model.NumProj {
		return nil
	}
	if m := a.experts[layer][p]; m != nil {
		return m.l
	}
	return nil
}

// ExpertModule reports the rank and alpha of projection p of layer's
// experts, and whether they are adapted.
func (a *Adapter) ExpertModule(layer int, p model.Proj) (rank int, alpha float64, ok bool) {
	if l := a.ExpertLoRA(layer, p); l != nil {
		m := a.experts[layer][p]
		return m.rank, m.alpha, true
	}
	return 0, 0, false
}

func (a *Adapter) freeExperts() {
	for _, ms := range a.experts {
		for _, m := range ms {
			if m != nil {
				for _, b := range []kernels.Buffer{m.l.A, m.l.B, m.l.DA, m.l.DB} {
					a.be.Free(b)
				}
			}
		}
	}
	a.experts = nil
}

// addExpertDelta adds scale·B_e·A_e of expert e's projection p to w (out
// × in), in float64 as addDelta does.
func (a *Adapter) addExpertDelta(w []float64, layer, e int, p model.Proj) {
	m := a.experts[layer][p]
	in, out := a.cfg.ExpertDims(p)
	r := m.rank
	av := a.download(m.l.A.Slice(e*r*in, r*in))
	bv := a.download(m.l.B.Slice(e*out*r, out*r))
	scale := m.alpha / float64(r)
	if a.Config.UseRSLoRA {
		scale = m.alpha / math.Sqrt(float64(r))
	}
	addProduct(w, av, bv, in, out, r, scale)
}

// addProduct adds scale·B·A (B out × r, A r × in) to w (out × in).
func addProduct(w []float64, av, bv []float32, in, out, r int, scale float64) {
	row := make([]float64, in)
	for o := range out {
		clear(row)
		for k := range r {
			b := float64(bv[o*r+k])
			for i, x := range av[k*in : (k+1)*in] {
				row[i] += b * float64(x)
			}
		}
		for i, d := range row {
			w[o*in+i] += scale * d
		}
	}
}

// expertWeightOf is expert e's base weight of p in a sparse layer.
func expertWeightOf(l *model.Layer, e int, p model.Proj) kernels.Buffer {
	x := l.MoE.Experts[e]
	return map[model.Proj]kernels.Buffer{model.ProjGate: x.Gate, model.ProjUp: x.Up, model.ProjDown: x.Down}[p]
}

// compatibleExperts checks the adapter's experts against c's.
func (a *Adapter) compatibleExperts(c *model.Config) error {
	for layer := range c.NumLayers {
		if c.IsSparse(layer) != a.cfg.IsSparse(layer) {
			return fmt.Errorf("layer %d is a mixture-of-experts layer in one of the adapter's model and this one but not the other; it belongs to another model", layer)
		}
	}
	if c.SparseLayers() == 0 {
		return nil
	}
	if c.NumExperts != a.cfg.NumExperts {
		return fmt.Errorf("the adapter's model has %d experts per layer but this one %d (num_experts); it belongs to another model", a.cfg.NumExperts, c.NumExperts)
	}
	for _, p := range []model.Proj{model.ProjGate, model.ProjUp, model.ProjDown} {
		in, out := c.ExpertDims(p)
		ain, aout := a.cfg.ExpertDims(p)
		if in != ain || out != aout {
			return fmt.Errorf("the adapter's expert %s is %d → %d but the model's is %d → %d; it belongs to another model", p, ain, aout, in, out)
		}
	}
	return nil
}
