package model

import "github.com/grpo-dev/grpo/kernels"

// expertRows are the rows a sparse layer's experts run on, grouped by
// expert, with what their forward writes and keeps: on one device every
// permuted row of the layer's tokens over all its experts (moeActs'
// buffers); under expert parallelism the rows this rank received for its
// own experts (moe_ep.go). offsets holds experts+1 row offsets from 0.
type expertRows struct {
	x                    kernels.Buffer // rows × hidden: the experts' input
	gate, up, act, fused kernels.Buffer // rows × moe_intermediate (fused: × 2)
	y                    kernels.Buffer // rows × hidden: each row's expert output
	xa                   [NumProj]kernels.Buffer
	offsets              kernels.Buffer
	rows, experts        int
}

// expertRows are the layer's own permuted rows over every expert: the
// one-device case.
func (s *moeActs) expertRows(rows, experts int) expertRows {
	return expertRows{x: s.xp, gate: s.gate, up: s.up, act: s.act, fused: s.fused, y: s.yp, xa: s.xa,
		offsets: s.offsets, rows: rows, experts: experts}
}

// expertGrads are the experts' backward scratch over the same rows: dy,
// the gradient of y, in; dx, the gradient of x, out.
type expertGrads struct {
	dy, dx                   kernels.Buffer
	dAct, dGate, dUp, dFused kernels.Buffer
	dyB                      [NumProj]kernels.Buffer
}

// expertsForward runs layer l's experts on e.x into e.y: the gate/up
// grouped GEMM (with its bias), the experts' adapters, the activation,
// the down GEMM and its adapter and bias.
func (m *Model) expertsForward(b moe, l int, e expertRows) {
	be, c, w := m.Backend, m.Config, m.W.Layers[l].MoE
	hd, mi, rows, ne := c.ExpertWidth(), c.MoEIntermediateSize, e.rows, e.experts
	if b.relu2 {
		// Up alone, no gate: the GEMM writes up's rows directly.
		w.gateUpGEMM(be, e.up, e.x, e.offsets, rows, ne, mi, hd, true)
	} else {
		w.gateUpGEMM(be, e.fused, e.x, e.offsets, rows, ne, 2*mi, hd, true)
		if w.GateUpBias != nil {
			be.GroupedAddBias(e.fused, w.GateUpBias, e.offsets, rows, ne, 2*mi)
		}
		be.CopyColumns(e.gate, e.fused, rows, mi, mi, 0, 2*mi, 0)
		be.CopyColumns(e.up, e.fused, rows, mi, mi, 0, 2*mi, mi)
	}
	for _, p := range b.expertInputs() {
		if lr := m.expertLoRA(l, p); lr != nil {
			dst := e.gate
			if p == ProjUp {
				dst = e.up
			}
			m.expertProject(lr, p, dst, e.x, e.xa[p], e.offsets, rows, ne)
		}
	}
	m.expertActivation(b, e.act, e.gate, e.up, rows*mi)
	w.downGEMM(be, e.y, e.act, e.offsets, rows, ne, hd, mi, true)
	if lr := m.expertLoRA(l, ProjDown); lr != nil {
		m.expertProject(lr, ProjDown, e.y, e.act, e.xa[ProjDown], e.offsets, rows, ne)
	}
	if w.DownBias != nil {
		// Before the routing weight, which MoECombine applies.
		be.GroupedAddBias(e.y, w.DownBias, e.offsets, rows, ne, hd)
	}
}

// expertsBackward is expertsForward's backward: given g.dy it writes
// g.dx, adding the expert adapters' gradients. e.act is recomputed from
// the kept gate and up (e.act is scratch here).
func (m *Model) expertsBackward(b moe, l int, e expertRows, g expertGrads) {
	be, c, w := m.Backend, m.Config, m.W.Layers[l].MoE
	hd, mi, rows, ne := c.ExpertWidth(), c.MoEIntermediateSize, e.rows, e.experts
	m.expertActivation(b, e.act, e.gate, e.up, rows*mi)
	w.downGEMM(be, g.dAct, g.dy, e.offsets, rows, ne, mi, hd, false)
	if lr := m.expertLoRA(l, ProjDown); lr != nil {
		m.expertProjectBackward(lr, ProjDown, g.dAct, g.dy, e.act, e.xa[ProjDown], g.dyB[ProjDown], e.offsets, rows, ne)
	}
	switch {
	case b.relu2:
		be.ReLU2Backward(g.dUp, g.dAct, e.up, rows*mi)
		w.gateUpGEMM(be, g.dx, g.dUp, e.offsets, rows, ne, hd, mi, false)
	case b.clampedGLU:
		be.ClampedSwiGLUBackward(g.dGate, g.dUp, g.dAct, e.gate, e.up, rows*mi, c.ClampedGLU())
	default:
		be.SwiGLUBackward(g.dGate, g.dUp, g.dAct, e.gate, e.up, rows*mi)
	}
	if !b.relu2 {
		be.CopyColumns(g.dFused, g.dGate, rows, mi, 2*mi, 0, mi, 0)
		be.CopyColumns(g.dFused, g.dUp, rows, mi, 2*mi, mi, mi, 0)
		w.gateUpGEMM(be, g.dx, g.dFused, e.offsets, rows, ne, hd, 2*mi, false)
	}
	for _, p := range b.expertInputs() {
		if lr := m.expertLoRA(l, p); lr != nil {
			dy := g.dGate
			if p == ProjUp {
				dy = g.dUp
			}
			m.expertProjectBackward(lr, p, g.dx, dy, e.x, e.xa[p], g.dyB[p], e.offsets, rows, ne)
		}
	}
}
