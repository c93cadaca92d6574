package lora

import (
	"fmt"
	"math"
	"slices"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// Merge folds a into m's base weights, W ← W + scale·B·A for every adapted
// projection (every expert's, in a mixture-of-experts layer), so that m
// without an adapter computes what m with a did. The
// sum is formed on the host in float64 and stored back in the weight's
// dtype (a BF16 weight is rounded to nearest even). Every model sharing m's
// weights (m.WithAdapter copies) sees the merged weights; applying a on top
// afterwards would count it twice.
func Merge(m *model.Model, a *Adapter) error {
	if err := a.compatible(m.Config); err != nil {
		return err
	}
	for layer := range a.experts {
		if mw := m.W.Layers[layer].MoE; mw != nil && (mw.GateUpMX != nil || mw.DownMX != nil) && slices.ContainsFunc(a.experts[layer][:], func(x *expertModule) bool { return x != nil }) {
			return fmt.Errorf("layer %d: the adapter adapts experts this backend keeps in MXFP4; grpo does not merge into MXFP4 weights (requantizing would lose most of the update): serve the adapter unmerged, or load the model on the CPU backend (which dequantizes MXFP4 to bf16) to merge", layer)
		}
	}
	be := m.Backend
	for layer := range a.mods {
		for p, mod := range a.mods[layer] {
			if mod == nil {
				continue
			}
			w := weightOf(&m.W.Layers[layer], model.Proj(p))
			vals := make([]float32, w.Len())
			be.Download(vals, w)
			wf := make([]float64, len(vals))
			for i, v := range vals {
				wf[i] = float64(v)
			}
			a.addDelta(wf, layer, model.Proj(p))
			for i, v := range wf {
				vals[i] = float32(v)
			}
			be.Upload(w, vals)
		}
	}
	for layer, mod := range a.routers {
		if mod == nil {
			continue
		}
		w := m.W.Layers[layer].MoE.Router
		vals := make([]float32, w.Len())
		be.Download(vals, w)
		wf := make([]float64, len(vals))
		for i, v := range vals {
			wf[i] = float64(v)
		}
		a.addRouterDelta(wf, layer)
		for i, v := range wf {
			vals[i] = float32(v)
		}
		be.Upload(w, vals)
	}
	for layer := range a.experts {
		for p, mod := range a.experts[layer] {
			if mod == nil {
				continue
			}
			for e := range m.Config.NumExperts {
				w := expertWeightOf(&m.W.Layers[layer], e, model.Proj(p))
				vals := make([]float32, w.Len())
				be.Download(vals, w)
				wf := make([]float64, len(vals))
				for i, v := range vals {
					wf[i] = float64(v)
				}
				a.addExpertDelta(wf, layer, e, model.Proj(p))
				for i, v := range wf {
					vals[i] = float32(v)
				}
				be.Upload(w, vals)
			}
		}
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("merging on %s: %w", be.Name(), err)
	}
	return nil
}

// addDelta adds scale·B·A of one module to w (out × in, row-major), with
// scale = alpha/r (or alpha/√r) in float64, as PEFT's merge defines it.
func (a *Adapter) addDelta(w []float64, layer int, p model.Proj) {
	mod := a.mods[layer][p]
	in, out := a.cfg.Dims(p)
	av, bv := a.download(mod.l.A), a.download(mod.l.B)
	r := mod.rank
	scale := mod.alpha / float64(r)
	if a.Config.UseRSLoRA {
		scale = mod.alpha / math.Sqrt(float64(r))
	}
	addProduct(w, av, bv, in, out, r, scale)
}

// compatible checks that the adapter was built for a model of c's shape.
func (a *Adapter) compatible(c *model.Config) error {
	if c.NumLayers != len(a.mods) {
		return fmt.Errorf("the adapter has %d layers but the model has %d (num_hidden_layers); it belongs to another model", len(a.mods), c.NumLayers)
	}
	for p := range model.NumProj {
		in, out := c.Dims(p)
		ain, aout := a.cfg.Dims(p)
		if in != ain || out != aout {
			return fmt.Errorf("the adapter's %s is %d → %d but the model's is %d → %d; it belongs to another model", p, ain, aout, in, out)
		}
	}
	return a.compatibleExperts(c)
}

// weightOf is p's frozen weight in layer l (model.Layer.Weight: the
// layer's blocks know their weights).
func weightOf(l *model.Layer, p model.Proj) kernels.Buffer { return l.Weight(p) }
