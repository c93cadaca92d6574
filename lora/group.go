package lora

import (
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// groupedA is one layer's A matrices (and gradients) of the adapted
// projections of a group, end to end.
type groupedA struct {
	projs []model.Proj
	a, da kernels.Buffer
}

// groups are the projections that read one input (model.GroupedAdapter).
var groups = [][]model.Proj{{model.ProjQ, model.ProjK, model.ProjV}, {model.ProjGate, model.ProjUp}}

// groupA moves, in every layer, the A matrices and their gradients of the
// adapted projections sharing an input into one buffer each, so the
// model's shrink for the group is one GEMM. Each projection's A and DA
// become views at its rows: Params, PEFT files, checkpoints and optimizer
// state stay per projection, byte for byte. Called once the adapter is
// built; the per-projection buffers are freed as they are moved.
func (a *Adapter) groupA() {
	a.grouped = make([][]groupedA, len(a.mods))
	if a.views == nil {
		a.views = map[kernels.Buffer]bool{}
	}
	for layer := range a.mods {
		for _, g := range groups {
			var projs []model.Proj
			rows := 0
			for _, p := range g {
				if m := a.mods[layer][p]; m != nil {
					projs = append(projs, p)
					rows += m.rank
				}
			}
			if len(projs) < 2 {
				continue
			}
			in, _ := a.cfg.Dims(g[0])
			ga := groupedA{projs: projs, a: a.be.Alloc(kernels.F32, rows*in), da: a.be.Alloc(kernels.F32, rows*in)}
			moved := map[kernels.Buffer]kernels.Buffer{}
			off := 0
			for _, p := range projs {
				l := a.mods[layer][p].l
				for _, pair := range []struct {
					dst *kernels.Buffer
					all kernels.Buffer
				}{{&l.A, ga.a}, {&l.DA, ga.da}} {
					view := pair.all.Slice(off*in, l.Rank*in)
					a.be.Copy(view, *pair.dst)
					a.be.Free(*pair.dst)
					moved[*pair.dst] = view
					a.views[view] = true
					*pair.dst = view
				}
				off += l.Rank
			}
			for i := range a.params {
				if v, ok := moved[a.params[i].Value]; ok {
					a.params[i].Value = v
				}
				if v, ok := moved[a.params[i].Grad]; ok {
					a.params[i].Grad = v
				}
			}
			a.grouped[layer] = append(a.grouped[layer], ga)
		}
	}
}

// GroupA implements model.GroupedAdapter.
func (a *Adapter) GroupA(layer int, projs []model.Proj) (kernels.Buffer, kernels.Buffer) {
	if layer < 0 || layer >= len(a.grouped) {
		return nil, nil
	}
	for _, ga := range a.grouped[layer] {
		if equalProjs(ga.projs, projs) {
			return ga.a, ga.da
		}
	}
	return nil, nil
}

func equalProjs(a, b []model.Proj) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
