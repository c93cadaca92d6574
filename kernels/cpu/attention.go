package cpu

import (
	"math"
	"sync"

	"github.com/grpo-dev/grpo/kernels"
)

func (be *Backend) KVWrite(cache, x, slot, pos kernels.Buffer, nTok, width, maxLen int) {
	positive("KVWrite", nTok, width, maxLen)
	xs := floats("KVWrite", "x", x, nTok*width)
	ss := ints("KVWrite", "slot", slot, nTok)
	ps := ints("KVWrite", "pos", pos, nTok)
	cs := f32("KVWrite", "cache", cache, cache.Len())
	index("KVWrite", "slot", ss, len(cs)/(maxLen*width))
	index("KVWrite", "pos", ps, maxLen)
	for t := range nTok {
		dst := (int(ss[t])*maxLen + int(ps[t])) * width
		copy(cs[dst:dst+width], xs[t*width:(t+1)*width])
	}
}

// attnBlock is the most query tokens of one slot handled by one pair of
// sgemm calls. Larger blocks make better sgemm shapes; smaller ones waste
// less work on masked (future) positions and balance better across workers.
const attnBlock = 64

// attnScratch holds the per-worker Q, O and score matrices between calls,
// so decoding (one small Attention call per layer per token) does not
// allocate.
var attnScratch sync.Pool

// attnTask is a run of consecutive tokens of one slot and one KV head.
type attnTask struct{ t0, t1, g int }

// Attention works per (block of consecutive same-slot tokens, KV head): the
// block's queries for all query heads of that KV head are packed into one
// matrix Q, the scores S = scale·Q·Kᵀ over cache positions 0..P (P the
// block's largest position) come from one sgemm, each row is softmaxed over
// its own causal range 0..pos[t] with everything after set to 0, and
// O = S·V is a second sgemm. Nothing past P is read.
func (be *Backend) Attention(out, lse, q, kCache, vCache, slot, pos kernels.Buffer, nTok, nHead, nKV, headDim, maxLen int, scale float32) {
	const op = "Attention"
	positive(op, nTok, nHead, nKV, headDim, maxLen)
	if nHead%nKV != 0 {
		panic("cpu.Attention: nHead must be a multiple of nKV")
	}
	group := nHead / nKV
	rowW := nKV * headDim // one cache position
	qs := floats(op, "q", q, nTok*nHead*headDim)
	os := f32(op, "out", out, nTok*nHead*headDim)
	ks := floats(op, "kCache", kCache, kCache.Len())
	vs := floats(op, "vCache", vCache, vCache.Len())
	if len(ks) != len(vs) {
		panic("cpu.Attention: kCache and vCache differ in length")
	}
	ss := ints(op, "slot", slot, nTok)
	ps := ints(op, "pos", pos, nTok)
	index(op, "slot", ss, len(ks)/(maxLen*rowW))
	index(op, "pos", ps, maxLen)
	var ls []float32
	if lse != nil {
		ls = f32(op, "lse", lse, nTok*nHead)
	}

	var tasks []attnTask
	for t0 := 0; t0 < nTok; {
		t1 := t0 + 1
		for t1 < nTok && t1-t0 < attnBlock && ss[t1] == ss[t0] {
			t1++
		}
		for g := range nKV {
			tasks = append(tasks, attnTask{t0, t1, g})
		}
		t0 = t1
	}

	be.parallel(len(tasks), attnBlock*group*headDim*maxLen, func(lo, hi int) {
		buf, _ := attnScratch.Get().(*[]float32)
		if buf == nil {
			buf = new([]float32)
		}
		for _, tk := range tasks[lo:hi] {
			*buf = be.attendBlock(*buf, tk, qs, ks, vs, os, ls, ss, ps, nHead, group, headDim, maxLen, rowW, scale)
		}
		attnScratch.Put(buf)
	})
}

// attendBlock computes one task; buf is reusable scratch, returned grown.
func (be *Backend) attendBlock(buf []float32, tk attnTask, qs, ks, vs, os, ls []float32, ss, ps []int32,
	nHead, group, headDim, maxLen, rowW int, scale float32) []float32 {
	T := tk.t1 - tk.t0
	R := T * group // packed rows: token-major, then head within the group
	P := 0
	for t := tk.t0; t < tk.t1; t++ {
		P = max(P, int(ps[t])+1)
	}
	need := R*headDim*2 + R*P
	if cap(buf) < need {
		buf = make([]float32, need)
	}
	buf = buf[:need]
	qp, op, sc := buf[:R*headDim], buf[R*headDim:2*R*headDim], buf[2*R*headDim:]

	// The group's heads of one token are adjacent in q and out.
	span := group * headDim
	for i := range T {
		src := ((tk.t0+i)*nHead + tk.g*group) * headDim
		copy(qp[i*span:(i+1)*span], qs[src:src+span])
	}
	base := int(ss[tk.t0])*maxLen*rowW + tk.g*headDim
	kg, vg := ks[base:], vs[base:]

	be.gemm(false, true, R, P, headDim, scale, qp, headDim, kg, rowW, 0, sc, P)
	for r := range R {
		t := tk.t0 + r/group
		n := int(ps[t]) + 1
		row := sc[r*P : (r+1)*P]
		var mx float32
		var sum float64
		if be.vec != nil {
			mx, sum = be.vec.softmaxRow(row[:n])
		} else {
			mx = float32(math.Inf(-1))
			for _, s := range row[:n] {
				mx = max(mx, s)
			}
			for j, s := range row[:n] {
				e := expNonPos(float64(s - mx))
				row[j] = float32(e)
				sum += e
			}
		}
		inv := float32(1 / sum)
		for j := range row[:n] {
			row[j] *= inv
		}
		clear(row[n:])
		if ls != nil {
			ls[t*nHead+tk.g*group+r%group] = mx + float32(math.Log(sum))
		}
	}
	be.gemm(false, false, R, headDim, P, 1, sc, P, vg, rowW, 0, op, headDim)
	for i := range T {
		dst := ((tk.t0+i)*nHead + tk.g*group) * headDim
		copy(os[dst:dst+span], op[i*span:(i+1)*span])
	}
	return buf
}
