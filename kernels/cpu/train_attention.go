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
// as sgemm calls: dV and dK one per run of adjacent cache rows, the
// others over K and V read in place or gathered as Attention reads K.
// Blocks that share a (sequence, g) pair write the same dK/dV rows, so
// one worker handles all blocks of a pair in turn; sequences that share
// cache blocks count as one sequence for this.
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
	// K and V in several runs, or off 16-byte boundaries, are gathered
	// as Attention gathers K (keysAligned: V is dP's B operand), so P is
	// the forward's and dQ = scale·dS·K is one sgemm: summed per run,
	// OpenBLAS's blocking of the sum would follow where the blocks lie.
	at := func(sg segment) int { return sg.row*a.rowW + tk.g*hd }
	gather := len(segs) > 1 || !keysAligned(a.k[at(segs[0]):], a.rowW, hd) || !keysAligned(a.v[at(segs[0]):], a.rowW, hd)
	need := 4*R*hd + 2*R*P
	if gather {
		need += 2*P*hd + 6 // 6: room to align K and V
	}
	if cap(buf.f) < need {
		buf.f = make([]float32, need)
	}
	f := buf.f[:need]
	qp, dop, dqp := f[:R*hd], f[R*hd:2*R*hd], f[2*R*hd:3*R*hd]
	delta := f[3*R*hd : 3*R*hd+R]
	pr, dp := f[4*R*hd:4*R*hd+R*P], f[4*R*hd+R*P:4*R*hd+2*R*P]
	kg, vg, ld := a.k[at(segs[0]):], a.v[at(segs[0]):], a.rowW
	if gather {
		o := align16(f, 4*R*hd+2*R*P)
		ov := align16(f, o+P*hd)
		kg, vg, ld = f[o:][:P*hd], f[ov:][:P*hd], hd
		for _, sg := range segs {
			for j := range sg.n {
				src := (sg.row+j)*a.rowW + tk.g*hd
				copy(kg[(sg.pos-L+j)*hd:][:hd], a.k[src:src+hd])
				copy(vg[(sg.pos-L+j)*hd:][:hd], a.v[src:src+hd])
			}
		}
	}

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

	// P = exp(scale·Q·Kᵀ − lse), zero past each row's own position.
	be.gemm(false, true, R, P, hd, a.scale, qp, hd, kg, ld, 0, pr, P)
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
	}
	be.gemm(false, true, R, P, hd, 1, dop, hd, vg, ld, 0, dp, P) // dP = dO·Vᵀ
	for r := range R {
		pRow, dRow := pr[r*P:(r+1)*P], dp[r*P:(r+1)*P]
		for j := range dRow {
			dRow[j] = pRow[j] * (dRow[j] - delta[r])
		}
	}
	be.gemm(false, false, R, hd, P, a.scale, dp, P, kg, ld, 0, dqp, hd) // dQ = scale·dS·K
	for _, sg := range segs {
		be.gemm(true, false, sg.n, hd, R, a.scale, dp[sg.pos-L:], P, qp, hd, 1, a.dk[at(sg):], a.rowW) // dK += scale·dSᵀ·Q
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
