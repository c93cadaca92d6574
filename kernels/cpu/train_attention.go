package cpu

import (
	"sync"

	"github.com/grpo-dev/grpo/kernels"
)

// AttentionBackward recomputes each block's probabilities from q, k and
// lse (which holds the sink, so P is the forward's; the sink has no value,
// so it adds nothing else), over the block's positions L..P as the
// forward reads them, then, per block of consecutive same-sequence tokens and KV head g:
//
//	dV += Pᵀ·dO,  dP = dO·Vᵀ,  dS = P ⊙ (dP − rowsum(dO ⊙ O)),
//	dQ = scale·dS·K,  dK += scale·dSᵀ·Q
//
// as sgemm calls, one per run of adjacent cache rows for the products
// with K and V. Blocks that share a (sequence, g) pair write the same
// dK/dV rows, so one worker handles all blocks of a pair in turn;
// sequences that share cache blocks count as one sequence for this.
func (be *Backend) AttentionBackward(dq, dk, dv, dout, out, lse, q, kCache, vCache, seq, pos kernels.Buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, variant kernels.AttentionVariant) {
	const op = "AttentionBackward"
	positive(op, nTok, nHead, nKV, headDim)
	if nHead%nKV != 0 {
		panic("cpu.AttentionBackward: nHead must be a multiple of nKV")
	}
	group, rowW := nHead/nKV, nKV*headDim
	nq := nTok * nHead * headDim
	a := attnGrad{
		do: floats(op, "dout", dout, nq), o: floats(op, "out", out, nq),
		q: floats(op, "q", q, nq), lse: floats(op, "lse", lse, nTok*nHead),
		k: floats(op, "kCache", kCache, kCache.Len()), v: floats(op, "vCache", vCache, vCache.Len()),
		seq: ints(op, "seq", seq, nTok), pos: ints(op, "pos", pos, nTok),
		nHead: nHead, group: group, headDim: headDim, rowW: rowW, scale: scale,
		variant: variantOf(op, variant, nHead),
	}
	bf16Query(op, q, kCache, headDim)
	a.dq, a.dqBF16 = floatsOut(op, "dq", dq, nq)
	bf16Out(op, "dq", dq, q)
	bf16Out(op, "dout", dout, q)
	bf16Out(op, "out", out, q)
	a.dk, a.dv = f32(op, "dk", dk, len(a.k)), f32(op, "dv", dv, len(a.v))
	if len(a.k) != len(a.v) || len(a.dk) != len(a.k) {
		panic("cpu.AttentionBackward: kCache, vCache, dk and dv must have the same length")
	}
	a.pages = pagesOf(op, pages, len(a.k), rowW)
	a.pages.check(op, a.seq, a.pos, a.variant.window)

	// Group blocks by (sequence, KV head): each group is one unit of
	// parallel work. Sequences that share cache blocks (a GRPO group's
	// prompt) write the same dK/dV rows, so they form one unit per KV head.
	owner := a.pages.owners(a.seq, a.pos)
	type key struct{ seq, g int }
	order := []key{}
	units := map[key][]attnTask{}
	for _, tk := range attnTasks(a.seq, nKV) {
		k := key{int(owner[a.seq[tk.t0]]), tk.g}
		if _, ok := units[k]; !ok {
			order = append(order, k)
		}
		units[k] = append(units[k], tk)
	}
	var scratch sync.Pool
	be.parallel(len(order), attnBlock*group*headDim*a.pages.blockSize*a.pages.maxBlocks*4, func(lo, hi int) {
		buf, _ := scratch.Get().(*attnBuf)
		if buf == nil {
			buf = new(attnBuf)
		}
		for _, k := range order[lo:hi] {
			for _, tk := range units[k] {
				be.attendBlockBackward(buf, tk, &a)
			}
		}
		scratch.Put(buf)
	})
}

// attnGrad holds AttentionBackward's operands.
type attnGrad struct {
	dq, dk, dv, do, o, q, lse, k, v []float32
	dqBF16                          bool // dq is BF16: rounded as it is stored
	seq, pos                        []int32
	pages                           pageTable
	nHead, group, headDim, rowW     int
	scale                           float32
	variant                         attnVariant
}

func (be *Backend) attendBlockBackward(buf *attnBuf, tk attnTask, a *attnGrad) {
	T, hd := tk.t1-tk.t0, a.headDim
	R := T * a.group
	L, P := a.variant.span(a.pos[tk.t0:tk.t1])
	segs := a.pages.segments(buf.segs, int(a.seq[tk.t0]), L, P)
	buf.segs = segs
	P -= L // columns: positions L..L+P−1
	need := 4*R*hd + 2*R*P
	if cap(buf.f) < need {
		buf.f = make([]float32, need)
	}
	f := buf.f[:need]
	qp, dop, dqp := f[:R*hd], f[R*hd:2*R*hd], f[2*R*hd:3*R*hd]
	delta := f[3*R*hd : 3*R*hd+R]
	pr, dp := f[4*R*hd:4*R*hd+R*P], f[4*R*hd+R*P:]

	span := a.group * hd
	for i := range T {
		src := ((tk.t0+i)*a.nHead + tk.g*a.group) * hd
		copy(qp[i*span:(i+1)*span], a.q[src:src+span])
		copy(dop[i*span:(i+1)*span], a.do[src:src+span])
		for h := range a.group {
			d := 0.0
			off := src + h*hd
			for j := range hd {
				d += float64(a.do[off+j]) * float64(a.o[off+j])
			}
			delta[i*a.group+h] = float32(d)
		}
	}
	at := func(sg segment) int { return sg.row*a.rowW + tk.g*hd }

	// P = exp(scale·Q·Kᵀ − lse), zero past each row's own position.
	for _, sg := range segs {
		be.gemm(false, true, R, sg.n, hd, a.scale, qp, hd, a.k[at(sg):], a.rowW, 0, pr[sg.pos-L:], P)
	}
	for r := range R {
		t := tk.t0 + r/a.group
		lo, n := a.variant.first(int(a.pos[t]))-L, int(a.pos[t])+1-L
		l := float64(a.lse[t*a.nHead+tk.g*a.group+r%a.group])
		row := pr[r*P : (r+1)*P]
		if be.vec != nil {
			be.vec.expBelow(row[lo:n], l)
		} else {
			for j := range row[lo:n] {
				row[lo+j] = float32(expNonPos(min(float64(row[lo+j])-l, 0)))
			}
		}
		clear(row[:lo])
		clear(row[n:])
	}
	for _, sg := range segs {
		be.gemm(true, false, sg.n, hd, R, 1, pr[sg.pos-L:], P, dop, hd, 1, a.dv[at(sg):], a.rowW) // dV += Pᵀ·dO
		be.gemm(false, true, R, sg.n, hd, 1, dop, hd, a.v[at(sg):], a.rowW, 0, dp[sg.pos-L:], P)  // dP = dO·Vᵀ
	}
	for r := range R {
		pRow, dRow := pr[r*P:(r+1)*P], dp[r*P:(r+1)*P]
		for j := range dRow {
			dRow[j] = pRow[j] * (dRow[j] - delta[r])
		}
	}
	for i, sg := range segs {
		beta := float32(1)
		if i == 0 {
			beta = 0
		}
		be.gemm(false, false, R, hd, sg.n, a.scale, dp[sg.pos-L:], P, a.k[at(sg):], a.rowW, beta, dqp, hd) // dQ = scale·dS·K
		be.gemm(true, false, sg.n, hd, R, a.scale, dp[sg.pos-L:], P, qp, hd, 1, a.dk[at(sg):], a.rowW)     // dK += scale·dSᵀ·Q
	}
	for i := range T {
		dst := ((tk.t0+i)*a.nHead + tk.g*a.group) * hd
		copy(a.dq[dst:dst+span], dqp[i*span:(i+1)*span])
		if a.dqBF16 {
			for j, v := range a.dq[dst : dst+span] {
				a.dq[dst+j] = roundBF16(v)
			}
		}
	}
}
