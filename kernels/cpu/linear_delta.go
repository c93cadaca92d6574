package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// The gated delta rule on the CPU: the token-by-token recurrence in f32,
// one (run, value head) at a time. The forward runs every pair in
// parallel (pairs share no state: a slot written as final is no other
// run's init). The backward runs one goroutine per key head, over its
// value heads and every run, so that the query/key gradients summed over
// a group and the initial-state gradients summed over runs sharing a slot
// have a single writer; it keeps the states at chunk starts and
// recomputes a chunk's states from its start as it walks back through it.

// deltaChunk is the backward's recompute chunk: the states of one chunk
// are held at a time.
const deltaChunk = 64

type deltaDims struct{ nHeadK, nHeadV, dimK, dimV, width, hs int }

func deltaShape(op string, nHeadK, nHeadV, dimK, dimV int) deltaDims {
	positive(op, nHeadK, nHeadV, dimK, dimV)
	if nHeadV%nHeadK != 0 {
		panic(fmt.Sprintf("cpu.%s: nHeadV %d is not a multiple of nHeadK %d", op, nHeadV, nHeadK))
	}
	return deltaDims{nHeadK, nHeadV, dimK, dimV, 2*nHeadK*dimK + nHeadV*dimV, dimK * dimV}
}

// l2Into writes x/sqrt(Σx² + 1e-6)·scale into out and returns the
// 1/sqrt(Σx² + 1e-6).
func l2Into(out, x []float32, scale float64) float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	r := 1 / math.Sqrt(ss+1e-6)
	for i, v := range x {
		out[i] = float32(float64(v) * r * scale)
	}
	return r
}

// deltaTok is one token of one value head: q̂ and k̂ (normalised), v, the
// decay a = exp(g) and beta.
type deltaTok struct {
	q, k, v []float32
	a, beta float32
}

// token loads token t for value head h into q and k (dimK each).
func (d deltaDims) token(q, k, qkv, g, beta []float32, t, h int) deltaTok {
	row := qkv[t*d.width : (t+1)*d.width]
	kh := h / (d.nHeadV / d.nHeadK)
	l2Into(q, row[kh*d.dimK:(kh+1)*d.dimK], 1/math.Sqrt(float64(d.dimK)))
	l2Into(k, row[(d.nHeadK+kh)*d.dimK:(d.nHeadK+kh+1)*d.dimK], 1)
	v := row[2*d.nHeadK*d.dimK+h*d.dimV : 2*d.nHeadK*d.dimK+(h+1)*d.dimV]
	return deltaTok{q, k, v, float32(math.Exp(float64(g[t*d.nHeadV+h]))), beta[t*d.nHeadV+h]}
}

// step applies the token to S in place: S ← a·S + k̂δᵀ with δ = β(v −
// k̂ᵀ(a·S)), written into delta; if out is not nil it receives q̂ᵀS.
func (x deltaTok) step(S, delta, out []float32, dimV int) {
	clear(delta)
	for i, ki := range x.k {
		row := S[i*dimV : (i+1)*dimV]
		for j, s := range row {
			delta[j] += ki * s
		}
	}
	for j := range delta {
		delta[j] = x.beta * (x.v[j] - x.a*delta[j])
	}
	if out != nil {
		clear(out)
	}
	for i, ki := range x.k {
		row := S[i*dimV : (i+1)*dimV]
		qi := x.q[i]
		for j := range row {
			row[j] = x.a*row[j] + ki*delta[j]
			if out != nil {
				out[j] += qi * row[j]
			}
		}
	}
}

func (be *Backend) GatedDeltaRule(out, qkv, g, beta, state, runs kernels.Buffer, nRuns, nTok, nHeadK, nHeadV, dimK, dimV int) {
	const op = "GatedDeltaRule"
	d := deltaShape(op, nHeadK, nHeadV, dimK, dimV)
	per := nHeadV * d.hs
	rs, slots := linearRuns(op, runs, nRuns, nTok, state, per)
	o, obf := floatsOut(op, "out", out, nTok*nHeadV*dimV)
	qs := floats(op, "qkv", qkv, nTok*d.width)
	gs, bs := floats(op, "g", g, nTok*nHeadV), floats(op, "beta", beta, nTok*nHeadV)
	var st []float32
	if slots > 0 {
		st = f32(op, "state", state, slots*per)
	}
	be.parallel(len(rs)*nHeadV, nTok/max(1, len(rs))*d.hs*4, func(lo, hi int) {
		S := make([]float32, d.hs)
		q, k, delta := make([]float32, dimK), make([]float32, dimK), make([]float32, dimV)
		for p := lo; p < hi; p++ {
			r, h := rs[p/nHeadV], p%nHeadV
			clear(S)
			if init := stateOf(st, r.init, per); init != nil {
				copy(S, init[h*d.hs:(h+1)*d.hs])
			}
			for i := range r.count {
				t := r.first + i
				ot := o[(t*nHeadV+h)*dimV : (t*nHeadV+h+1)*dimV]
				d.token(q, k, qs, gs, bs, t, h).step(S, delta, ot, dimV)
				roundAllIf(obf, ot)
			}
			if fin := stateOf(st, r.final, per); fin != nil {
				copy(fin[h*d.hs:(h+1)*d.hs], S)
			}
		}
	})
}
