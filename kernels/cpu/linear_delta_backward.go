package cpu

import (
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// deltaGrads are one key head's outputs of GatedDeltaRuleBackward: dq̂
// and dk̂ (nTok × dimK, summed over the key head's value heads) before the
// l2 norms' backward.
type deltaGrads struct{ dq, dk []float32 }

func (be *Backend) GatedDeltaRuleBackward(dqkv, dg, dbeta, dState, dout, qkv, g, beta, state, runs kernels.Buffer, nRuns, nTok, nHeadK, nHeadV, dimK, dimV int) {
	const op = "GatedDeltaRuleBackward"
	d := deltaShape(op, nHeadK, nHeadV, dimK, dimV)
	per := nHeadV * d.hs
	rs, slots := linearRuns(op, runs, nRuns, nTok, state, per)
	dq, qbf := floatsOut(op, "dqkv", dqkv, nTok*d.width)
	dgs, dbs := f32(op, "dg", dg, nTok*nHeadV), f32(op, "dbeta", dbeta, nTok*nHeadV)
	do := floats(op, "dout", dout, nTok*nHeadV*dimV)
	qs := floats(op, "qkv", qkv, nTok*d.width)
	gs, bs := floats(op, "g", g, nTok*nHeadV), floats(op, "beta", beta, nTok*nHeadV)
	var st, dst []float32
	if slots > 0 {
		st = floats(op, "state", state, slots*per)
		dst = f32(op, "dState", dState, slots*per)
	}
	group := nHeadV / nHeadK
	n := maxCount(rs)
	be.parallel(nHeadK, nTok*group*d.hs*16, func(lo, hi int) {
		w := newDeltaWork(d, n)
		gr := deltaGrads{make([]float32, nTok*dimK), make([]float32, nTok*dimK)}
		for kh := lo; kh < hi; kh++ {
			clear(gr.dq)
			clear(gr.dk)
			for t := range nTok {
				clear(dq[t*d.width+2*nHeadK*dimK+kh*group*dimV : t*d.width+2*nHeadK*dimK+(kh+1)*group*dimV])
				clear(dgs[t*nHeadV+kh*group : t*nHeadV+(kh+1)*group])
				clear(dbs[t*nHeadV+kh*group : t*nHeadV+(kh+1)*group])
			}
			for h := kh * group; h < (kh+1)*group; h++ {
				for _, r := range rs {
					w.run(d, r, h, qs, gs, bs, do, stateOf(st, r.init, per), stateOf(dst, r.final, per), stateOf(dst, r.init, per), dq, dgs, dbs, gr)
				}
			}
			for t := range nTok {
				row := t * d.width
				l2Backward(dq[row+kh*dimK:row+(kh+1)*dimK], qs[row+kh*dimK:row+(kh+1)*dimK], gr.dq[t*dimK:(t+1)*dimK], 1/math.Sqrt(float64(dimK)))
				ko := (nHeadK + kh) * dimK
				l2Backward(dq[row+ko:row+ko+dimK], qs[row+ko:row+ko+dimK], gr.dk[t*dimK:(t+1)*dimK], 1)
				// A BF16 dqkv is rounded once, after the key head's
				// whole sums: its q and k columns and its value heads'.
				roundAllIf(qbf, dq[row+kh*dimK:row+(kh+1)*dimK])
				roundAllIf(qbf, dq[row+ko:row+ko+dimK])
				roundAllIf(qbf, dq[row+2*nHeadK*dimK+kh*group*dimV:row+2*nHeadK*dimK+(kh+1)*group*dimV])
			}
		}
	})
}

// l2Backward writes dx for y = x·r·scale, r = 1/sqrt(Σx² + 1e-6).
func l2Backward(dx, x, dy []float32, scale float64) {
	var ss, dot float64
	for i, v := range x {
		ss += float64(v) * float64(v)
		dot += float64(v) * float64(dy[i])
	}
	r := 1 / math.Sqrt(ss+1e-6)
	for i, v := range x {
		dx[i] = float32(scale * (r*float64(dy[i]) - float64(v)*r*r*r*dot))
	}
}

// deltaWork is one goroutine's scratch: the states at chunk starts of a
// run, the states before each token of one chunk and their δ, and the
// running state gradient.
type deltaWork struct {
	starts, before, deltas []float32
	S, dS                  []float32
	q, k, ddelta, dpred    []float32
	toks                   []deltaTok
	qk                     []float32 // q̂ and k̂ of a chunk's tokens
}

func newDeltaWork(d deltaDims, maxRun int) *deltaWork {
	chunks := (maxRun + deltaChunk - 1) / deltaChunk
	return &deltaWork{
		starts: make([]float32, chunks*d.hs), before: make([]float32, deltaChunk*d.hs), deltas: make([]float32, deltaChunk*d.dimV),
		S: make([]float32, d.hs), dS: make([]float32, d.hs),
		q: make([]float32, d.dimK), k: make([]float32, d.dimK), ddelta: make([]float32, d.dimV), dpred: make([]float32, d.dimV),
		toks: make([]deltaTok, deltaChunk), qk: make([]float32, 2*deltaChunk*d.dimK),
	}
}

// run does one (run, value head): dv, dg and dbeta of its tokens, dq̂ and
// dk̂ added into gr, and the initial state's gradient added into dInit.
func (w *deltaWork) run(d deltaDims, r run, h int, qs, gs, bs, do, init, dFinal, dInit, dq, dgs, dbs []float32, gr deltaGrads) {
	hs, dimK, dimV := d.hs, d.dimK, d.dimV
	clear(w.S)
	if init != nil {
		copy(w.S, init[h*hs:(h+1)*hs])
	}
	for i := range r.count {
		if i%deltaChunk == 0 {
			copy(w.starts[i/deltaChunk*hs:], w.S)
		}
		d.token(w.q, w.k, qs, gs, bs, r.first+i, h).step(w.S, w.deltas[:dimV], nil, dimV)
	}
	clear(w.dS)
	if dFinal != nil {
		copy(w.dS, dFinal[h*hs:(h+1)*hs])
	}
	for c0 := (r.count - 1) / deltaChunk * deltaChunk; c0 >= 0; c0 -= deltaChunk {
		L := min(deltaChunk, r.count-c0)
		copy(w.S, w.starts[c0/deltaChunk*hs:(c0/deltaChunk+1)*hs])
		for j := range L {
			copy(w.before[j*hs:], w.S)
			q, k := w.qk[2*j*dimK:(2*j+1)*dimK], w.qk[(2*j+1)*dimK:(2*j+2)*dimK]
			w.toks[j] = d.token(q, k, qs, gs, bs, r.first+c0+j, h)
			w.toks[j].step(w.S, w.deltas[j*dimV:(j+1)*dimV], nil, dimV)
		}
		for j := L - 1; j >= 0; j-- {
			t := r.first + c0 + j
			w.tokenBackward(d, w.toks[j], w.before[j*hs:(j+1)*hs], w.deltas[j*dimV:(j+1)*dimV], do[(t*d.nHeadV+h)*dimV:(t*d.nHeadV+h+1)*dimV],
				gr.dq[t*dimK:(t+1)*dimK], gr.dk[t*dimK:(t+1)*dimK], dq[t*d.width+2*d.nHeadK*dimK+h*dimV:], &dgs[t*d.nHeadV+h], &dbs[t*d.nHeadV+h])
		}
	}
	if dInit != nil {
		di := dInit[h*hs : (h+1)*hs]
		for e, v := range w.dS {
			di[e] += v
		}
	}
}

// tokenBackward takes w.dS from the gradient of the state after token x
// to that of the state before it (prev), adding the token's dq̂ and dk̂
// and writing its dv (dimV values at dv), dg and dbeta.
func (w *deltaWork) tokenBackward(d deltaDims, x deltaTok, prev, delta, do, dq, dk, dv []float32, dg, dbeta *float32) {
	dimV := d.dimV
	clear(w.ddelta)
	clear(w.dpred) // holds k̂ᵀS' (the prediction) first
	for i, ki := range x.k {
		sp, ds := prev[i*dimV:(i+1)*dimV], w.dS[i*dimV:(i+1)*dimV]
		qi := x.q[i]
		var dqi, dki float32
		for j := range dimV {
			s := x.a * sp[j]
			w.dpred[j] += ki * s
			dqi += (s + ki*delta[j]) * do[j] // S_t·do
			ds[j] += qi * do[j]
			dki += ds[j] * delta[j]
			w.ddelta[j] += ki * ds[j]
		}
		dq[i] += dqi
		dk[i] += dki
	}
	var db float64
	for j := range dimV {
		db += float64(w.ddelta[j]) * float64(x.v[j]-w.dpred[j])
		dv[j] += x.beta * w.ddelta[j]
		w.dpred[j] = -x.beta * w.ddelta[j]
	}
	*dbeta += float32(db)
	var dga float64
	for i, ki := range x.k {
		sp, ds := prev[i*dimV:(i+1)*dimV], w.dS[i*dimV:(i+1)*dimV]
		var dki float32
		for j := range dimV {
			s := x.a * sp[j]
			dki += s * w.dpred[j]
			dsp := ds[j] + ki*w.dpred[j]
			dga += float64(dsp) * float64(s)
			ds[j] = x.a * dsp
		}
		dk[i] += dki
	}
	*dg += float32(dga)
}
