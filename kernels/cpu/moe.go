package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// The MoE ops. Routing and combining run per token in float32 where the
// CUDA kernels do (the softmax, so that top-k sees the same
// probabilities), grouping is a counting sort, and the grouped GEMMs are
// one sgemm per expert over its contiguous rows (the host knows the
// offsets; the device kernel does not need to).

// routeSoftmax writes p = softmax(row) in float32: max-subtracted exp,
// summed in order, divided once.
func routeSoftmax(p, row []float32) {
	m := float32(math.Inf(-1))
	for _, v := range row {
		m = max(m, v)
	}
	var s float32
	for i, v := range row {
		p[i] = float32(math.Exp(float64(v - m)))
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
}

func (be *Backend) MoERoute(weights, experts, logits kernels.Buffer, n, nExperts, topK int, normTopK, replay bool) {
	const op = "MoERoute"
	positive(op, n, nExperts, topK)
	if topK > nExperts {
		panic(fmt.Sprintf("cpu.%s: topK %d > nExperts %d", op, topK, nExperts))
	}
	ws := f32(op, "weights", weights, n*topK)
	es := ints(op, "experts", experts, n*topK)
	ls := floats(op, "logits", logits, n*nExperts)
	if replay {
		index(op, "experts", es, nExperts)
	}
	be.parallel(n, nExperts*topK, func(lo, hi int) {
		p := make([]float32, nExperts)
		for t := lo; t < hi; t++ {
			routeSoftmax(p, ls[t*nExperts:(t+1)*nExperts])
			e, w := es[t*topK:(t+1)*topK], ws[t*topK:(t+1)*topK]
			if !replay {
				topKIndices(e, p)
			}
			var sum float32
			for j := range e {
				w[j] = p[e[j]]
				sum += w[j]
			}
			if normTopK {
				for j := range w {
					w[j] /= sum
				}
			}
		}
	})
}

// topKIndices writes the indices of the len(out) largest values of p in
// decreasing order, the lower index first among equals.
func topKIndices(out []int32, p []float32) {
	for j := range out {
		best := -1
		for i, v := range p {
			if taken(out[:j], i) {
				continue
			}
			if best < 0 || v > p[best] {
				best = i
			}
		}
		out[j] = int32(best)
	}
}

func taken(chosen []int32, i int) bool {
	for _, c := range chosen {
		if int(c) == i {
			return true
		}
	}
	return false
}

func (be *Backend) MoERouteBackward(dlogits, dweights, dprobs, logits, experts kernels.Buffer, n, nExperts, topK int, normTopK bool) {
	const op = "MoERouteBackward"
	positive(op, n, nExperts, topK)
	dl := f32(op, "dlogits", dlogits, n*nExperts)
	dw := floats(op, "dweights", dweights, n*topK)
	ls := floats(op, "logits", logits, n*nExperts)
	es := ints(op, "experts", experts, n*topK)
	index(op, "experts", es, nExperts)
	var dps []float32
	if dprobs != nil {
		dps = floats(op, "dprobs", dprobs, nExperts)
	}
	be.parallel(n, nExperts*topK, func(lo, hi int) {
		p := make([]float32, nExperts)
		dp := make([]float64, nExperts)
		for t := lo; t < hi; t++ {
			routeSoftmax(p, ls[t*nExperts:(t+1)*nExperts])
			routeGradP(dp, p, es[t*topK:(t+1)*topK], dw[t*topK:(t+1)*topK], normTopK)
			for i, g := range dps {
				dp[i] += float64(g)
			}
			// softmax backward: dl_i = p_i·(dp_i − Σ_j p_j·dp_j).
			var dot float64
			for i := range p {
				dot += float64(p[i]) * dp[i]
			}
			row := dl[t*nExperts : (t+1)*nExperts]
			for i := range row {
				row[i] = float32(float64(p[i]) * (dp[i] - dot))
			}
		}
	})
}

// routeGradP writes dp, the gradient with respect to the probabilities of
// one token's weights w_j = p[e_j] (/ Σ_k p[e_k] with normTopK) given dw.
func routeGradP(dp []float64, p []float32, e []int32, dw []float32, normTopK bool) {
	for i := range dp {
		dp[i] = 0
	}
	if !normTopK {
		for j, ej := range e {
			dp[ej] += float64(dw[j])
		}
		return
	}
	// w_j = p_j / S: ∂/∂p_j = dw_j/S − Σ_k dw_k·p_k/S².
	var s, dws float64
	for _, ej := range e {
		s += float64(p[ej])
	}
	for j, ej := range e {
		dws += float64(dw[j]) * float64(p[ej])
	}
	for j, ej := range e {
		dp[ej] += float64(dw[j])/s - dws/(s*s)
	}
}

func (be *Backend) MoEGroup(offsets, tokens, rows, experts kernels.Buffer, n, nExperts, topK int) {
	const op = "MoEGroup"
	positive(op, n, nExperts, topK)
	off := ints(op, "offsets", offsets, nExperts+1)
	tok := ints(op, "tokens", tokens, n*topK)
	rw := ints(op, "rows", rows, n*topK)
	es := ints(op, "experts", experts, n*topK)
	index(op, "experts", es, nExperts)
	for i := range off {
		off[i] = 0
	}
	for _, e := range es {
		off[e+1]++
	}
	for e := range nExperts {
		off[e+1] += off[e]
	}
	next := make([]int32, nExperts)
	copy(next, off[:nExperts])
	for a, e := range es {
		r := next[e]
		next[e]++
		tok[r] = int32(a / topK)
		rw[a] = r
	}
}

// groupOffsets returns offsets checked to be non-decreasing and within
// [0, rows] (a run of a grouping over more experts need not start at 0).
func groupOffsets(op string, offsets kernels.Buffer, nExperts, rows int) []int32 {
	off := ints(op, "offsets", offsets, nExperts+1)
	if off[0] < 0 || int(off[nExperts]) > rows {
		panic(fmt.Sprintf("cpu.%s: offsets run from %d to %d, want a run within rows [0, %d)", op, off[0], off[nExperts], rows))
	}
	for e := range nExperts {
		if off[e+1] < off[e] {
			panic(fmt.Sprintf("cpu.%s: offsets[%d] = %d < offsets[%d] = %d", op, e+1, off[e+1], e, off[e]))
		}
	}
	return off
}

func (be *Backend) GroupedMatMul(c, a, b, offsets kernels.Buffer, rows, nExperts, n, k int, transB bool, alpha, beta float32) {
	const op = "GroupedMatMul"
	positive(op, nExperts, n, k)
	if rows == 0 {
		return
	}
	be.groupedMatMul(op, c, a, floats(op, "b", b, nExperts*k*n), offsets, rows, nExperts, n, k, transB, alpha, beta)
}

// groupedMatMul is GroupedMatMul over B's values bs. A BF16 C (bf16
// values in f32 storage, so beta reads it widened exactly) receives each
// expert's f32 result and is then rounded in place: the one rounding the
// GPU kernels make at their store.
func (be *Backend) groupedMatMul(op string, c, a kernels.Buffer, bs []float32, offsets kernels.Buffer, rows, nExperts, n, k int, transB bool, alpha, beta float32) {
	cs, cBF16 := floatsOut(op, "c", c, rows*n)
	as := floats(op, "a", a, rows*k)
	off := groupOffsets(op, offsets, nExperts, rows)
	ldb := n
	if transB {
		ldb = k
	}
	be.parallel(nExperts, 2*rows*n*k/nExperts, func(lo, hi int) {
		for e := lo; e < hi; e++ {
			r0, r1 := int(off[e]), int(off[e+1])
			if r1 == r0 {
				continue
			}
			be.gemm(false, transB, r1-r0, n, k, alpha, as[r0*k:], k, bs[e*k*n:], ldb, beta, cs[r0*n:], n)
			if cBF16 {
				for i := r0 * n; i < r1*n; i++ {
					cs[i] = roundBF16(cs[i])
				}
			}
		}
	})
}

func (be *Backend) GroupedMatMulTN(c, a, b, offsets kernels.Buffer, rows, nExperts, m, n int, alpha, beta float32) {
	const op = "GroupedMatMulTN"
	positive(op, nExperts, m, n)
	cs := f32(op, "c", c, nExperts*m*n)
	as := floats(op, "a", a, rows*m)
	bs := floats(op, "b", b, rows*n)
	off := groupOffsets(op, offsets, nExperts, rows)
	be.parallel(nExperts, 2*max(rows, 1)*m*n/nExperts, func(lo, hi int) {
		for e := lo; e < hi; e++ {
			r0, r1 := int(off[e]), int(off[e+1])
			ce := cs[e*m*n : (e+1)*m*n]
			if r1 == r0 {
				for i := range ce {
					ce[i] = beta * ce[i]
					if beta == 0 {
						ce[i] = 0
					}
				}
				continue
			}
			be.gemm(true, false, m, n, r1-r0, alpha, as[r0*m:], m, bs[r0*n:], n, beta, ce, n)
		}
	})
}

func (be *Backend) MoECombine(out, x, weights, rows kernels.Buffer, n, topK, cols int) {
	const op = "MoECombine"
	positive(op, n, topK, cols)
	os, bf := floatsOut(op, "out", out, n*cols)
	xs := floats(op, "x", x, n*topK*cols)
	rw := ints(op, "rows", rows, n*topK)
	index(op, "rows", rw, n*topK)
	var ws []float32
	if weights != nil {
		ws = floats(op, "weights", weights, n*topK)
	}
	be.parallel(n, topK*cols, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			o := os[t*cols : (t+1)*cols]
			for i := range o {
				o[i] = 0
			}
			for j := range topK {
				w := float32(1)
				if ws != nil {
					w = ws[t*topK+j]
				}
				r := int(rw[t*topK+j])
				xr := xs[r*cols : (r+1)*cols]
				for i := range o {
					o[i] += w * xr[i]
				}
			}
			if bf {
				castBF16(o, o) // the f32 sum, rounded once
			}
		}
	})
}

func (be *Backend) MoECombineBackward(dx, dweights, dout, x, weights, rows kernels.Buffer, n, topK, cols int) {
	const op = "MoECombineBackward"
	positive(op, n, topK, cols)
	dxs, bf := floatsOut(op, "dx", dx, n*topK*cols)
	dws := f32(op, "dweights", dweights, n*topK)
	ds := floats(op, "dout", dout, n*cols)
	xs := floats(op, "x", x, n*topK*cols)
	ws := floats(op, "weights", weights, n*topK)
	rw := ints(op, "rows", rows, n*topK)
	index(op, "rows", rw, n*topK)
	be.parallel(n, topK*cols, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			d := ds[t*cols : (t+1)*cols]
			for j := range topK {
				a := t*topK + j
				r := int(rw[a])
				xr, dr := xs[r*cols:(r+1)*cols], dxs[r*cols:(r+1)*cols]
				var dot float32
				for i := range d {
					dr[i] = roundIf(bf, ws[a]*d[i])
					dot += d[i] * xr[i]
				}
				dws[a] = dot
			}
		}
	})
}
