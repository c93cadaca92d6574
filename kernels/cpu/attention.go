package cpu

import (
	"math"
	"sync"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels"
)

// KVWrite copies each row of x to the cache row its page table names,
// rounding to bf16 when the cache is a BF16 buffer (the twin of the GPU's
// kv_write_bf16; this backend's own caches are F32, Describe().KVCache).
func (be *Backend) KVWrite(cache, x, seq, pos kernels.Buffer, pages kernels.KVPages, nTok, width int) {
	positive("KVWrite", nTok, width)
	xs := floats("KVWrite", "x", x, nTok*width)
	ss := ints("KVWrite", "seq", seq, nTok)
	ps := ints("KVWrite", "pos", pos, nTok)
	cs := floats("KVWrite", "cache", cache, cache.Len())
	pt := pagesOf("KVWrite", pages, len(cs), width)
	pt.checkWrites("KVWrite", ss, ps)
	bf16 := cache.DType() == kernels.BF16
	for t := range nTok {
		dst := cs[pt.row(int(ss[t]), int(ps[t]))*width:][:width]
		copy(dst, xs[t*width:(t+1)*width])
		if bf16 {
			for j, v := range dst {
				dst[j] = roundBF16(v)
			}
		}
	}
}

// attnBlock is the most query tokens of one slot handled by one pair of
// sgemm calls. Larger blocks make better sgemm shapes; smaller ones waste
// less work on masked (future) positions and balance better across workers.
const attnBlock = 64

// attnScratch holds the per-worker Q, O and score matrices and the page
// segments between calls, so decoding (one small Attention call per layer
// per token) does not allocate.
var attnScratch sync.Pool

// attnBuf is one worker's scratch.
type attnBuf struct {
	f    []float32
	segs []segment
}

// attnTask is a run of consecutive tokens of one sequence and one KV head.
type attnTask struct{ t0, t1, g int }

// attnTasks splits the tokens into runs of at most attnBlock consecutive
// tokens of one sequence, one task per run and KV head.
func attnTasks(seq []int32, nKV int) []attnTask {
	var tasks []attnTask
	for t0 := 0; t0 < len(seq); {
		t1 := t0 + 1
		for t1 < len(seq) && t1-t0 < attnBlock && seq[t1] == seq[t0] {
			t1++
		}
		for g := range nKV {
			tasks = append(tasks, attnTask{t0, t1, g})
		}
		t0 = t1
	}
	return tasks
}

// Attention works per (block of consecutive same-sequence tokens, KV
// head): the block's queries for all query heads of that KV head are
// packed into one matrix Q, the scores S = scale·Q·Kᵀ over positions L..P
// (P the block's largest position, L its smallest first position: 0, or
// the earliest window start) come from one sgemm over K (read in place
// when its rows are adjacent, gathered from the block table's runs
// otherwise), each row is softmaxed over its own range first(pos[t])..pos[t]
// (with its head's sink in the denominator) with everything else set to
// 0, and O = S·V is a second sgemm. Nothing outside L..P is read.
func (be *Backend) Attention(out, lse, q, kCache, vCache, seq, pos kernels.Buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, variant kernels.AttentionVariant) {
	const op = "Attention"
	positive(op, nTok, nHead, nKV, headDim)
	av := variantOf(op, variant, nHead)
	if nHead%nKV != 0 {
		panic("cpu.Attention: nHead must be a multiple of nKV")
	}
	group := nHead / nKV
	rowW := nKV * headDim // one cache position
	qs := floats(op, "q", q, nTok*nHead*headDim)
	bf16Query(op, q, kCache, headDim)
	os, bf := floatsOut(op, "out", out, nTok*nHead*headDim)
	bf16Out(op, "out", out, q)
	ks := floats(op, "kCache", kCache, kCache.Len())
	vs := floats(op, "vCache", vCache, vCache.Len())
	if len(ks) != len(vs) {
		panic("cpu.Attention: kCache and vCache differ in length")
	}
	ss := ints(op, "seq", seq, nTok)
	ps := ints(op, "pos", pos, nTok)
	pt := pagesOf(op, pages, len(ks), rowW)
	pt.check(op, ss, ps, av.window)
	var ls []float32
	if lse != nil {
		ls = f32(op, "lse", lse, nTok*nHead)
	}

	tasks := attnTasks(ss, nKV)
	be.parallel(len(tasks), attnBlock*group*headDim*pt.blockSize*pt.maxBlocks, func(lo, hi int) {
		buf, _ := attnScratch.Get().(*attnBuf)
		if buf == nil {
			buf = new(attnBuf)
		}
		for _, tk := range tasks[lo:hi] {
			be.attendBlock(buf, &pt, tk, av, qs, ks, vs, os, ls, bf, ss, ps, nHead, group, headDim, rowW, scale)
		}
		attnScratch.Put(buf)
	})
}

// attendBlock computes one task in buf's scratch, growing it as needed,
// rounding its outputs to bf16 as it stores them when bf is set.
func (be *Backend) attendBlock(buf *attnBuf, pt *pageTable, tk attnTask, av attnVariant, qs, ks, vs, os, ls []float32, bf bool, ss, ps []int32,
	nHead, group, headDim, rowW int, scale float32) {
	T := tk.t1 - tk.t0
	R := T * group // packed rows: token-major, then head within the group
	L, P := av.span(ps[tk.t0:tk.t1])
	buf.segs = pt.segments(buf.segs, int(ss[tk.t0]), L, P)
	P -= L // score columns: positions L..L+P−1
	// Keys and values in several runs (a paged cache whose blocks are not
	// adjacent) are gathered into contiguous scratch first: one sgemm per
	// product instead of one per run, which for a decode step's few query
	// rows is mostly call overhead. Keys read in place must also sit where
	// gathered ones do, on 16-byte boundaries (see keysAligned).
	k0 := buf.segs[0].row*rowW + tk.g*headDim
	gather := len(buf.segs) > 1 || !keysAligned(ks[k0:], rowW, headDim)
	need := R*headDim*2 + R*P
	if gather {
		need += 2*P*headDim + 3 // 3: room to align the keys
	}
	if cap(buf.f) < need {
		buf.f = make([]float32, need)
	}
	f := buf.f[:need]
	qp, op, sc := f[:R*headDim], f[R*headDim:2*R*headDim], f[2*R*headDim:2*R*headDim+R*P]

	// The group's heads of one token are adjacent in q and out.
	span := group * headDim
	for i := range T {
		src := ((tk.t0+i)*nHead + tk.g*group) * headDim
		copy(qp[i*span:(i+1)*span], qs[src:src+span])
	}
	kg, vg, ld := ks[k0:], vs[k0:], rowW
	if gather {
		o := align16(f, 2*R*headDim+R*P)
		kg, vg, ld = f[o:][:P*headDim], f[o+P*headDim:][:P*headDim], headDim
		for _, sg := range buf.segs {
			for j := range sg.n {
				src := (sg.row+j)*rowW + tk.g*headDim
				copy(kg[(sg.pos-L+j)*headDim:][:headDim], ks[src:src+headDim])
				copy(vg[(sg.pos-L+j)*headDim:][:headDim], vs[src:src+headDim])
			}
		}
	}
	be.gemm(false, true, R, P, headDim, scale, qp, headDim, kg, ld, 0, sc, P)
	for r := range R {
		t := tk.t0 + r/group
		h := tk.g*group + r%group
		lo, n := av.first(int(ps[t]))-L, int(ps[t])+1-L
		row := sc[r*P : (r+1)*P]
		var mx float32
		var sum float64
		if be.vec != nil {
			mx, sum = be.vec.softmaxRow(row[lo:n])
		} else {
			mx = float32(math.Inf(-1))
			for _, s := range row[lo:n] {
				mx = max(mx, s)
			}
			for j, s := range row[lo:n] {
				e := expNonPos(float64(s - mx))
				row[lo+j] = float32(e)
				sum += e
			}
		}
		if av.sinks != nil {
			mx, sum = addSink(row[lo:n], mx, sum, av.sinks[h])
		}
		inv := float32(1 / sum)
		for j := range row[lo:n] {
			row[lo+j] *= inv
		}
		clear(row[:lo])
		clear(row[n:])
		if ls != nil {
			ls[t*nHead+h] = mx + float32(math.Log(sum))
		}
	}
	be.gemm(false, false, R, headDim, P, 1, sc, P, vg, ld, 0, op, headDim)
	for i := range T {
		dst := ((tk.t0+i)*nHead + tk.g*group) * headDim
		copy(os[dst:dst+span], op[i*span:(i+1)*span])
		if bf {
			for j, v := range os[dst : dst+span] {
				os[dst+j] = roundBF16(v)
			}
		}
	}
}

// keysAligned reports whether keys read in place from k (rows ld apart)
// all start on a 16-byte boundary, as gathered keys do (align16). Scores
// must not depend on where a sequence's blocks lie — a sliding-window
// pool, prefix sharing and bit-exact resume compare caches whose blocks
// lie differently — and gonum's A·Bᵀ does: f32.DotUnitary peels scalar
// products until each B row (a key) is 16-byte aligned, so its summation
// order follows the key's address mod 16. (OpenBLAS 0.3.21's sgemm was
// measured not to depend on it.) Rows ld apart share their alignment when
// ld and the key length are multiples of 4; otherwise they are gathered.
func keysAligned(k []float32, ld, headDim int) bool {
	return ld%4 == 0 && headDim%4 == 0 && uintptr(unsafe.Pointer(unsafe.SliceData(k)))%16 == 0
}

// align16 is the first index from o of f (3 spare elements each time it
// is used) whose address is a multiple of 16 bytes.
func align16(f []float32, o int) int {
	a := uintptr(unsafe.Pointer(unsafe.SliceData(f)))/4 + uintptr(o)
	return o + int(-a%4)
}
