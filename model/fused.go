package model

import "github.com/grpo-dev/grpo/kernels"

// group is a set of projections that read one input: q/k/v (the attention
// norm's output) and gate/up (the MLP norm's). Their base weights are one
// buffer (Layer.QKV, Layer.GateUp), so the group's forward is one GEMM;
// their LoRA shrinks x·Aᵀ are one GEMM too when the adapter stores the A
// matrices together (GroupedAdapter), and their expands one op that adds
// into the fused output in place (kernels.LoRAOps).
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
	rows   []int // first row of each in a's Σ ranks rows
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

// loraUnit is one LoRAShrink and the LoRAExpand of its parts: a group's
// members together when their A matrices are one buffer, else each alone.
type loraUnit struct {
	a, da kernels.Buffer
	xa    kernels.Buffer // n × ranks: the shrink's output, kept for the backward
	dxa   kernels.Buffer // n × ranks: the backward's dy·B (nil in a forward)
	ranks int
	parts []kernels.LoRAPart
}

// yFunc places member i (its position in groupProjs) of a group: the
// buffer its output (or output gradient) lies in, that buffer's width and
// the member's first column.
type yFunc func(i int) (y kernels.Buffer, cols, off int)

// units splits xa and dxa (n × Σ ranks elements each; dxa nil in a
// forward) among the group's LoRA units: one unit with every member over
// the grouped A, or one per member over its own A and its n × rank share
// of xa and dxa.
func (gl *groupLoRA) units(g group, xa, dxa kernels.Buffer, n int, y yFunc) []loraUnit {
	part := func(i int) kernels.LoRAPart {
		lr := gl.loras[i]
		yb, cols, off := y(groupIndex(g, gl.projs[i]))
		return kernels.LoRAPart{B: lr.B, DB: lr.DB, Rank: lr.Rank, Out: gl.outDim[i], Scale: lr.Scale, Y: yb, YCols: cols, YOff: off}
	}
	if gl.a != nil {
		u := loraUnit{a: gl.a, da: gl.da, xa: xa, dxa: dxa, ranks: gl.ranks}
		for i := range gl.loras {
			u.parts = append(u.parts, part(i))
		}
		return []loraUnit{u}
	}
	us := make([]loraUnit, len(gl.loras))
	for i, lr := range gl.loras {
		us[i] = loraUnit{a: lr.A, da: lr.DA, xa: xa.Slice(gl.rows[i]*n, lr.Rank*n), ranks: lr.Rank, parts: []kernels.LoRAPart{part(i)}}
		if dxa != nil {
			us[i].dxa = dxa.Slice(gl.rows[i]*n, lr.Rank*n)
		}
	}
	return us
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

// groupOffset is member i's first column in the group's fused output.
func (c *Config) groupOffset(g group, i int) int {
	off := 0
	for _, p := range groupProjs[g][:i] {
		_, out := c.Dims(p)
		off += out
	}
	return off
}

// projectGroup computes fused = in·Wᵀ + Σ LoRA (n × groupWidth) for the
// group's projections with one GEMM over the fused weight, reading inBF16
// (in's bf16 cast) instead of in when it is not nil, then one LoRA shrink
// of the same operand over the group's A matrices into xa (n × Σ ranks;
// scratch from a when nil) and one expand adding every member into its
// columns of fused.
func (m *Model) projectGroup(a *arena, layer int, g group, fused, in, inBF16, w kernels.Buffer, n int, xa kernels.Buffer) {
	be, c := m.Backend, m.Config
	width := c.groupWidth(g)
	inDim, _ := c.Dims(groupProjs[g][0])
	x := gemmInput(in, inBF16)
	be.MatMul(fused, x, w, n, width, inDim, false, true, 1, 0)
	gl := m.groupLoRA(layer, g)
	if gl == nil {
		return
	}
	if xa == nil {
		xa = a.alloc(kernels.F32, gl.ranks*n)
	}
	for _, u := range gl.units(g, xa, nil, n, func(i int) (kernels.Buffer, int, int) { return fused, width, c.groupOffset(g, i) }) {
		be.LoRAShrink(u.xa, x, u.a, n, inDim, u.ranks)
		be.LoRAExpand(u.xa, u.parts, n)
	}
}

// gemmInput is the A operand of a GEMM with the base weights, and the x
// of the LoRA shrink beside it: the bf16 cast when the caller has one
// (half the bytes of the f32 rows; the shrink accumulates in f32 all the
// same, kernels.LoRAOps).
func gemmInput(in, inBF16 kernels.Buffer) kernels.Buffer {
	if inBF16 != nil {
		return inBF16
	}
	return in
}

func groupIndex(g group, p Proj) int {
	for i, q := range groupProjs[g] {
		if q == p {
			return i
		}
	}
	panic("model: projection outside its group")
}

// loraGroupBackward adds the LoRA terms of a group's backward, y placing
// each member's output gradient: Scale·(dy·B)·A into dx (which holds the
// base part, dy·W; skipped when dx is nil) and every member's A and B
// gradients, with one LoRAExpandBackward and one LoRAShrinkBackward per
// unit. x and xa are the forward's input and shrink output; dxa (n × Σ
// ranks, like xa) receives dy·B.
func (m *Model) loraGroupBackward(layer int, g group, dx, x kernels.Buffer, n int, xa, dxa kernels.Buffer, y yFunc) {
	be := m.Backend
	gl := m.groupLoRA(layer, g)
	if gl == nil {
		return
	}
	for _, u := range gl.units(g, xa, dxa, n, y) {
		be.LoRAExpandBackward(u.dxa, u.xa, u.parts, n)
		be.LoRAShrinkBackward(dx, u.da, u.dxa, x, u.a, n, gl.inDim, u.ranks)
	}
}
