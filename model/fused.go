package model

import "github.com/grpo-dev/grpo/kernels"

// group is a set of projections that read one input: q/k/v (the attention
// norm's output) and gate/up (the MLP norm's). Their base weights are one
// buffer (Layer.QKV, Layer.GateUp), so the group's forward is one GEMM;
// their LoRA shrinks x·Aᵀ are one GEMM too when the adapter stores the A
// matrices together (GroupedAdapter).
type group uint8

const (
	groupQKV group = iota
	groupGateUp
	numGroups
)

var groupProjs = [numGroups][]Proj{{ProjQ, ProjK, ProjV}, {ProjGate, ProjUp}}

// GroupedAdapter is an Adapter that stores the A matrices of projections
// sharing an input end to end, so that their shrink is one GEMM.
type GroupedAdapter interface {
	Adapter
	// GroupA returns, for layer, one buffer [A_p; …] over the adapted
	// projections of projs (in that order, each Rank × in) and the matching
	// gradient buffer (nil when there is none), or nil, nil when they are
	// not stored that way. Each adapted projection's LoRA A and DA are the
	// views of these at its rows.
	GroupA(layer int, projs []Proj) (a, da kernels.Buffer)
}

// groupLoRA is the adapted part of a group in one layer.
type groupLoRA struct {
	projs  []Proj // adapted members, in group order
	loras  []*LoRA
	rows   []int // first row of each in the group's x·Aᵀ (Σ ranks × n)
	ranks  int   // Σ ranks
	a, da  kernels.Buffer
	inDim  int
	outDim []int
}

func (m *Model) groupLoRA(layer int, g group) *groupLoRA {
	gl := &groupLoRA{}
	for _, p := range groupProjs[g] {
		if lr := m.lora(layer, p); lr != nil {
			gl.projs, gl.loras, gl.rows = append(gl.projs, p), append(gl.loras, lr), append(gl.rows, gl.ranks)
			gl.ranks += lr.Rank
			in, out := m.Config.Dims(p)
			gl.inDim, gl.outDim = in, append(gl.outDim, out)
		}
	}
	if gl.ranks == 0 {
		return nil
	}
	if ga, ok := m.Adapter.(GroupedAdapter); ok && len(gl.projs) > 1 {
		gl.a, gl.da = ga.GroupA(layer, gl.projs)
	}
	return gl
}

// xaRows is member i's rows of the group's x·Aᵀ (ranks × n, row-major).
func (gl *groupLoRA) xaRows(xaT kernels.Buffer, i, n int) kernels.Buffer {
	return xaT.Slice(gl.rows[i]*n, gl.loras[i].Rank*n)
}

// groupWidth is Σ out over the group's projections: the fused output's
// width.
func (c *Config) groupWidth(g group) int {
	w := 0
	for _, p := range groupProjs[g] {
		_, out := c.Dims(p)
		w += out
	}
	return w
}

// projectGroup computes outs[i] = in·W_iᵀ (+ bias_i) (+ LoRA_i) for the
// group's projections with one GEMM over the fused weight into fused
// (scratch, n × groupWidth), split by CopyColumns. The LoRA shrink is
// computed transposed, xaT = A·inᵀ (Σ ranks × n), so each member's rows
// are contiguous for its expand; when xaT is nil a scratch from a is used,
// otherwise it is kept for the backward.
func (m *Model) projectGroup(a *arena, layer int, g group, outs, biases []kernels.Buffer, in, w, fused kernels.Buffer, n int, xaT kernels.Buffer) {
	be, c := m.Backend, m.Config
	width := c.groupWidth(g)
	inDim, _ := c.Dims(groupProjs[g][0])
	be.MatMul(fused, in, w, n, width, inDim, false, true, 1, 0)
	off := 0
	for i, p := range groupProjs[g] {
		_, out := c.Dims(p)
		be.CopyColumns(outs[i], fused, n, out, out, 0, width, off)
		if biases[i] != nil {
			be.AddBias(outs[i], biases[i], n, out)
		}
		off += out
	}
	gl := m.groupLoRA(layer, g)
	if gl == nil {
		return
	}
	if xaT == nil {
		xaT = a.alloc(kernels.F32, gl.ranks*n)
	}
	if gl.a != nil {
		be.MatMul(xaT, gl.a, in, gl.ranks, n, inDim, false, true, 1, 0)
	} else {
		for i, lr := range gl.loras {
			be.MatMul(gl.xaRows(xaT, i, n), lr.A, in, lr.Rank, n, inDim, false, true, 1, 0)
		}
	}
	for i, lr := range gl.loras {
		be.MatMul(outs[groupIndex(g, gl.projs[i])], gl.xaRows(xaT, i, n), lr.B, n, gl.outDim[i], lr.Rank, true, true, lr.Scale, 1)
	}
}

func groupIndex(g group, p Proj) int {
	for i, q := range groupProjs[g] {
		if q == p {
			return i
		}
	}
	panic("model: projection outside its group")
}

// projectGroupBackward is projectGroup's backward: given dys[i] (n × out_i)
// it writes (or, with accumulate, adds) dx = Σ dy_i·W_i + Σ Scale_i·(dy_i·B_i)·A_i,
// skipped when dx is nil, and adds each member's LoRA gradients. The base
// part runs per projection on the views of the fused weight (joining the
// dys would cost a copy and a buffer); the LoRA part forms
// Scale_i·(dy_i·B_i)ᵀ for every member as rows of one dyBT (Σ ranks × n),
// so that with grouped A matrices dx and the A gradients are one GEMM each.
func (m *Model) projectGroupBackward(a *arena, layer int, g group, dx kernels.Buffer, dys []kernels.Buffer, x kernels.Buffer, ws []kernels.Buffer, n int, xaT kernels.Buffer, accumulate bool) {
	be, c := m.Backend, m.Config
	inDim, _ := c.Dims(groupProjs[g][0])
	if dx != nil {
		for i, p := range groupProjs[g] {
			_, out := c.Dims(p)
			var beta float32
			if accumulate || i > 0 {
				beta = 1
			}
			be.MatMul(dx, dys[i], ws[i], n, inDim, out, false, false, 1, beta)
		}
	}
	gl := m.groupLoRA(layer, g)
	if gl == nil {
		return
	}
	dyBT := a.alloc(kernels.F32, gl.ranks*n)
	for i, lr := range gl.loras {
		dy := dys[groupIndex(g, gl.projs[i])]
		be.MatMul(gl.xaRows(dyBT, i, n), lr.B, dy, lr.Rank, n, gl.outDim[i], true, true, lr.Scale, 0)
		if lr.DB != nil {
			be.MatMul(lr.DB, dy, gl.xaRows(xaT, i, n), gl.outDim[i], lr.Rank, n, true, true, lr.Scale, 1)
		}
	}
	if gl.a != nil {
		if dx != nil {
			be.MatMul(dx, dyBT, gl.a, n, inDim, gl.ranks, true, false, 1, 1)
		}
		if gl.da != nil {
			be.MatMul(gl.da, dyBT, x, gl.ranks, inDim, n, false, false, 1, 1)
		}
		return
	}
	for i, lr := range gl.loras {
		if dx != nil {
			be.MatMul(dx, gl.xaRows(dyBT, i, n), lr.A, n, inDim, lr.Rank, true, false, 1, 1)
		}
		if lr.DA != nil {
			be.MatMul(lr.DA, gl.xaRows(dyBT, i, n), x, lr.Rank, inDim, n, false, false, 1, 1)
		}
	}
}
