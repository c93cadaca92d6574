package cpu

import (
	"sync"

	"github.com/grpo-dev/grpo/kernels"
)

// AttentionBackward recomputes each block's probabilities from q, k and
// lse, then, per block of consecutive same-slot tokens and KV head g:
//
//	dV += Pᵀ·dO,  dP = dO·Vᵀ,  dS = P ⊙ (dP − rowsum(dO ⊙ O)),
//	dQ = scale·dS·K,  dK += scale·dSᵀ·Q
//
// as four sgemm calls. Blocks that share a (slot, g) pair write the same
// dK/dV rows, so one worker handles all blocks of a pair in turn.
func (be *Backend) AttentionBackward(dq, dk, dv, dout, out, lse, q, kCache, vCache, slot, pos kernels.Buffer, nTok, nHead, nKV, headDim, maxLen int, scale float32) {
	const op = "AttentionBackward"
	positive(op, nTok, nHead, nKV, headDim, maxLen)
	if nHead%nKV != 0 {
		panic("cpu.AttentionBackward: nHead must be a multiple of nKV")
	}
	group, rowW := nHead/nKV, nKV*headDim
	nq := nTok * nHead * headDim
	a := attnGrad{
		dq: f32(op, "dq", dq, nq), do: floats(op, "dout", dout, nq), o: floats(op, "out", out, nq),
		q: floats(op, "q", q, nq), lse: floats(op, "lse", lse, nTok*nHead),
		k: floats(op, "kCache", kCache, kCache.Len()), v: floats(op, "vCache", vCache, vCache.Len()),
		slot: ints(op, "slot", slot, nTok), pos: ints(op, "pos", pos, nTok),
		nHead: nHead, group: group, headDim: headDim, maxLen: maxLen, rowW: rowW, scale: scale,
	}
	a.dk, a.dv = f32(op, "dk", dk, len(a.k)), f32(op, "dv", dv, len(a.v))
	if len(a.k) != len(a.v) || len(a.dk) != len(a.k) {
		panic("cpu.AttentionBackward: kCache, vCache, dk and dv must have the same length")
	}
	index(op, "slot", a.slot, len(a.k)/(maxLen*rowW))
	index(op, "pos", a.pos, maxLen)

	// Group blocks by (slot, KV head): each group is one unit of parallel work.
	type key struct{ slot, g int }
	order := []key{}
	units := map[key][]attnTask{}
	for t0 := 0; t0 < nTok; {
		t1 := t0 + 1
		for t1 < nTok && t1-t0 < attnBlock && a.slot[t1] == a.slot[t0] {
			t1++
		}
		for g := range nKV {
			k := key{int(a.slot[t0]), g}
			if _, ok := units[k]; !ok {
				order = append(order, k)
			}
			units[k] = append(units[k], attnTask{t0, t1, g})
		}
		t0 = t1
	}
	var scratch sync.Pool
	be.parallel(len(order), attnBlock*group*headDim*maxLen*4, func(lo, hi int) {
		buf, _ := scratch.Get().(*[]float32)
		if buf == nil {
			buf = new([]float32)
		}
		for _, k := range order[lo:hi] {
			for _, tk := range units[k] {
				*buf = be.attendBlockBackward(*buf, tk, &a)
			}
		}
		scratch.Put(buf)
	})
}

// attnGrad holds AttentionBackward's operands.
type attnGrad struct {
	dq, dk, dv, do, o, q, lse, k, v []float32
	slot, pos                       []int32
	nHead, group, headDim, maxLen   int
	rowW                            int
	scale                           float32
}

func (be *Backend) attendBlockBackward(buf []float32, tk attnTask, a *attnGrad) []float32 {
	T, hd := tk.t1-tk.t0, a.headDim
	R := T * a.group
	P := 0
	for t := tk.t0; t < tk.t1; t++ {
		P = max(P, int(a.pos[t])+1)
	}
	need := 4*R*hd + 2*R*P
	if cap(buf) < need {
		buf = make([]float32, need)
	}
	buf = buf[:need]
	qp, dop, dqp := buf[:R*hd], buf[R*hd:2*R*hd], buf[2*R*hd:3*R*hd]
	delta := buf[3*R*hd : 3*R*hd+R]
	pr, dp := buf[4*R*hd:4*R*hd+R*P], buf[4*R*hd+R*P:]

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
	base := int(a.slot[tk.t0])*a.maxLen*a.rowW + tk.g*hd
	kg, vg := a.k[base:], a.v[base:]
	dkg, dvg := a.dk[base:], a.dv[base:]

	// P = exp(scale·Q·Kᵀ − lse), zero past each row's own position.
	be.gemm(false, true, R, P, hd, a.scale, qp, hd, kg, a.rowW, 0, pr, P)
	for r := range R {
		t := tk.t0 + r/a.group
		n := int(a.pos[t]) + 1
		l := float64(a.lse[t*a.nHead+tk.g*a.group+r%a.group])
		row := pr[r*P : (r+1)*P]
		if be.vec != nil {
			be.vec.expBelow(row[:n], l)
		} else {
			for j := range row[:n] {
				row[j] = float32(expNonPos(min(float64(row[j])-l, 0)))
			}
		}
		clear(row[n:])
	}
	be.gemm(true, false, P, hd, R, 1, pr, P, dop, hd, 1, dvg, a.rowW) // dV += Pᵀ·dO
	be.gemm(false, true, R, P, hd, 1, dop, hd, vg, a.rowW, 0, dp, P)  // dP = dO·Vᵀ
	for r := range R {
		pRow, dRow := pr[r*P:(r+1)*P], dp[r*P:(r+1)*P]
		for j := range dRow {
			dRow[j] = pRow[j] * (dRow[j] - delta[r])
		}
	}
	be.gemm(false, false, R, hd, P, a.scale, dp, P, kg, a.rowW, 0, dqp, hd) // dQ = scale·dS·K
	be.gemm(true, false, P, hd, R, a.scale, dp, P, qp, hd, 1, dkg, a.rowW)  // dK += scale·dSᵀ·Q
	for i := range T {
		dst := ((tk.t0+i)*a.nHead + tk.g*a.group) * hd
		copy(a.dq[dst:dst+span], dqp[i*span:(i+1)*span])
	}
	return buf
}
