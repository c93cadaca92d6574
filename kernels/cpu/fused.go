package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// The fused ops (kernels.FusedOps) do their steps row by row within one
// parallel pass, so a row is still in cache for the step after the first;
// each step is the unfused op's own code (C kernels or plain Go).

// bf16 returns the first n elements of a BF16 output operand (stored as
// float32 holding bf16 values, like every BF16 buffer of this backend).
func bf16(op, name string, b kernels.Buffer, n int) []float32 {
	if b.DType() != kernels.BF16 {
		panic(fmt.Sprintf("cpu.%s: %s is %v, want bf16", op, name, b.DType()))
	}
	return floats(op, name, b, n)
}

// castBF16 stores src rounded to bf16 in dst.
func castBF16(dst, src []float32) {
	for i, v := range src {
		dst[i] = roundBF16(v)
	}
}

func (be *Backend) AddRMSNorm(sum, out, outBF16, rstd, x, r, w kernels.Buffer, rows, dim int, eps float32) {
	const op = "AddRMSNorm"
	positive(op, rows, dim)
	n := rows * dim
	xs, ws := floats(op, "x", x, n), floats(op, "w", w, dim)
	os := f32(op, "out", out, n)
	var ss, rv, cs, rs []float32
	if (r == nil) != (sum == nil) {
		panic(fmt.Sprintf("cpu.%s: sum and r must both be set or both nil", op))
	}
	if r != nil {
		rv, ss = floats(op, "r", r, n), f32(op, "sum", sum, n)
	}
	if outBF16 != nil {
		cs = bf16(op, "outBF16", outBF16, n)
	}
	if rstd != nil {
		rs = f32(op, "rstd", rstd, rows)
	}
	be.parallel(rows, 4*dim, func(lo, hi int) {
		a, b := lo*dim, hi*dim
		src := xs
		if rv != nil {
			src = ss
			if be.vec != nil {
				be.vec.add(ss[a:b], xs[a:b], rv[a:b])
			} else {
				for i := a; i < b; i++ {
					ss[i] = xs[i] + rv[i]
				}
			}
		}
		if be.vec != nil {
			var rr []float32
			if rs != nil {
				rr = rs[lo:hi]
			}
			be.vec.rmsNorm(os[a:b], rr, src[a:b], ws, hi-lo, eps)
		} else {
			rmsNormRows(os, rs, src, ws, lo, hi, eps)
		}
		if cs != nil {
			castBF16(cs[a:b], os[a:b])
		}
	})
}

func (be *Backend) SwiGLURows(out, outBF16, gateUp kernels.Buffer, rows, width int) {
	const op = "SwiGLURows"
	positive(op, rows, width)
	os := f32(op, "out", out, rows*width)
	gu := floats(op, "gateUp", gateUp, rows*2*width)
	var cs []float32
	if outBF16 != nil {
		cs = bf16(op, "outBF16", outBF16, rows*width)
	}
	be.parallel(rows, 20*width, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			o, g, u := os[r*width:(r+1)*width], gu[r*2*width:(2*r+1)*width], gu[(2*r+1)*width:(2*r+2)*width]
			if be.vec != nil {
				be.vec.swiGLU(o, g, u)
			} else {
				for i := range o {
					gv := float64(g[i])
					o[i] = float32(gv / (1 + math.Exp(-gv)) * float64(u[i]))
				}
			}
			if cs != nil {
				castBF16(cs[r*width:(r+1)*width], o)
			}
		}
	})
}

func (be *Backend) SwiGLURowsBackward(dGateUp, dy, gateUp kernels.Buffer, rows, width int) {
	const op = "SwiGLURowsBackward"
	positive(op, rows, width)
	d := f32(op, "dGateUp", dGateUp, rows*2*width)
	ys := floats(op, "dy", dy, rows*width)
	gu := floats(op, "gateUp", gateUp, rows*2*width)
	be.parallel(rows, 30*width, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			g, u := gu[r*2*width:(2*r+1)*width], gu[(2*r+1)*width:(2*r+2)*width]
			dg, du := d[r*2*width:(2*r+1)*width], d[(2*r+1)*width:(2*r+2)*width]
			y := ys[r*width : (r+1)*width]
			if be.vec != nil {
				be.vec.swiGLUBackward(dg, du, y, g, u)
				continue
			}
			for i := range y {
				gv, uv, dv := float64(g[i]), float64(u[i]), float64(y[i])
				sig := 1 / (1 + math.Exp(-gv))
				dg[i] = float32(dv * uv * sig * (1 + gv*(1-sig)))
				du[i] = float32(dv * gv * sig)
			}
		}
	})
}

// AttentionInputs runs each token's heads through bias, norm and RoPE in a
// scratch row, with the unfused ops' arithmetic: the norm as RMSNorm's
// (C kernel or Go), the rotation in float64 as RoPE's.
func (be *Backend) AttentionInputs(q, qPre, kPre, rstdQ, rstdK, kCache, vCache, qkv, qBias, kBias, vBias, qNorm, kNorm, invFreq, seq, pos kernels.Buffer,
	pages kernels.KVPages, nTok, nHead, nKV, headDim int, eps float32) {
	const op = "AttentionInputs"
	positive(op, nTok, nHead, nKV, headDim)
	if headDim%2 != 0 {
		panic(fmt.Sprintf("cpu.%s: headDim %d is odd", op, headDim))
	}
	if (qNorm == nil) != (kNorm == nil) {
		panic(fmt.Sprintf("cpu.%s: qNorm and kNorm must both be set or both nil", op))
	}
	qd, kd, half := nHead*headDim, nKV*headDim, headDim/2
	width := qd + 2*kd
	opt := func(name string, b kernels.Buffer, n int) []float32 {
		if b == nil {
			return nil
		}
		return floats(op, name, b, n)
	}
	optOut := func(name string, b kernels.Buffer, n int) []float32 {
		if b == nil {
			return nil
		}
		return f32(op, name, b, n)
	}
	src := floats(op, "qkv", qkv, nTok*width)
	qs := f32(op, "q", q, nTok*qd)
	qPres, kPres, rqs, rks := optOut("qPre", qPre, nTok*qd), optOut("kPre", kPre, nTok*kd), optOut("rstdQ", rstdQ, nTok*nHead), optOut("rstdK", rstdK, nTok*nKV)
	biases := [3][]float32{opt("qBias", qBias, qd), opt("kBias", kBias, kd), opt("vBias", vBias, kd)}
	norms := [2][]float32{opt("qNorm", qNorm, headDim), opt("kNorm", kNorm, headDim)}
	fs := floats(op, "invFreq", invFreq, half)
	ss, ps := ints(op, "seq", seq, nTok), ints(op, "pos", pos, nTok)
	kc, vc := floats(op, "kCache", kCache, kCache.Len()), floats(op, "vCache", vCache, vCache.Len())
	pt := pagesOf(op, pages, len(kc), kd)
	if vCache.Len() != len(kc) || vCache.DType() != kCache.DType() {
		panic(fmt.Sprintf("cpu.%s: kCache is %v × %d, vCache %v × %d", op, kCache.DType(), len(kc), vCache.DType(), vCache.Len()))
	}
	// A BF16 cache (the sampler's where the backend says so) stores each
	// value rounded to nearest even, as KVWrite does.
	store := func(dst []float32, i int, v float32) { dst[i] = v }
	if kCache.DType() == kernels.BF16 {
		store = func(dst []float32, i int, v float32) { dst[i] = roundBF16(v) }
	}
	pt.check(op, ss, ps)
	be.parallel(nTok, 20*width, func(lo, hi int) {
		sin, cos := make([]float64, half), make([]float64, half)
		row := make([]float32, headDim)
		var rstd [1]float32
		for t := lo; t < hi; t++ {
			for i := range half {
				sin[i], cos[i] = math.Sincos(float64(float32(ps[t]) * fs[i]))
			}
			cacheRow := pt.row(int(ss[t]), int(ps[t])) * kd
			for h := range nHead + 2*nKV {
				// part 0: q, 1: k, 2: v; j is the head within its part.
				part, j := 0, h
				switch {
				case h >= nHead+nKV:
					part, j = 2, h-nHead-nKV
				case h >= nHead:
					part, j = 1, h-nHead
				}
				copy(row, src[t*width+h*headDim:t*width+(h+1)*headDim])
				if b := biases[part]; b != nil {
					for i := range row {
						row[i] += b[j*headDim+i]
					}
				}
				var dst, pre, rs []float32
				switch part {
				case 0:
					dst, pre, rs = qs[(t*nHead+j)*headDim:], qPres, rqs
				case 1:
					dst, pre, rs = kc[cacheRow+j*headDim:], kPres, rks
				default:
					for i, v := range row {
						store(vc, cacheRow+j*headDim+i, v)
					}
					continue
				}
				heads := nHead
				if part == 1 {
					heads = nKV
				}
				if pre != nil {
					copy(pre[(t*heads+j)*headDim:(t*heads+j+1)*headDim], row)
				}
				if w := norms[part]; w != nil {
					if be.vec != nil {
						be.vec.rmsNorm(row, rstd[:], row, w, 1, eps)
					} else {
						rmsNormRows(row, rstd[:], row, w, 0, 1, eps)
					}
					if rs != nil {
						rs[t*heads+j] = rstd[0]
					}
				}
				put := store // k goes to the cache
				if part == 0 {
					put = func(dst []float32, i int, v float32) { dst[i] = v }
				}
				for i := range half {
					x1, x2 := float64(row[i]), float64(row[i+half])
					put(dst, i, float32(x1*cos[i]-x2*sin[i]))
					put(dst, i+half, float32(x2*cos[i]+x1*sin[i]))
				}
			}
		}
	})
}

// AttentionInputsBackward gathers, rotates back and un-norms each token's
// heads in a scratch row, with the unfused ops' arithmetic (RoPE's float64
// rotation, RMSNormBackward's C kernel or float64 Go path).
func (be *Backend) AttentionInputsBackward(dqkv, dq, dkCache, dvCache, qPre, kPre, rstdQ, rstdK, qNorm, kNorm, invFreq, seq, pos kernels.Buffer,
	pages kernels.KVPages, nTok, nHead, nKV, headDim int) {
	const op = "AttentionInputsBackward"
	positive(op, nTok, nHead, nKV, headDim)
	if headDim%2 != 0 {
		panic(fmt.Sprintf("cpu.%s: headDim %d is odd", op, headDim))
	}
	if (qNorm == nil) != (kNorm == nil) {
		panic(fmt.Sprintf("cpu.%s: qNorm and kNorm must both be set or both nil", op))
	}
	qd, kd, half := nHead*headDim, nKV*headDim, headDim/2
	width := qd + 2*kd
	out := f32(op, "dqkv", dqkv, nTok*width)
	dqs := floats(op, "dq", dq, nTok*qd)
	dkc, dvc := floats(op, "dkCache", dkCache, dkCache.Len()), floats(op, "dvCache", dvCache, dvCache.Len())
	if len(dvc) != len(dkc) {
		panic(fmt.Sprintf("cpu.%s: dkCache has %d elements, dvCache %d", op, len(dkc), len(dvc)))
	}
	var pres, rstds, norms [2][]float32
	if qNorm != nil {
		pres = [2][]float32{floats(op, "qPre", qPre, nTok*qd), floats(op, "kPre", kPre, nTok*kd)}
		rstds = [2][]float32{floats(op, "rstdQ", rstdQ, nTok*nHead), floats(op, "rstdK", rstdK, nTok*nKV)}
		norms = [2][]float32{floats(op, "qNorm", qNorm, headDim), floats(op, "kNorm", kNorm, headDim)}
	}
	fs := floats(op, "invFreq", invFreq, half)
	ss, ps := ints(op, "seq", seq, nTok), ints(op, "pos", pos, nTok)
	pt := pagesOf(op, pages, len(dkc), kd)
	pt.check(op, ss, ps)
	be.parallel(nTok, 20*width, func(lo, hi int) {
		sin, cos := make([]float64, half), make([]float64, half)
		row := make([]float32, headDim)
		for t := lo; t < hi; t++ {
			for i := range half {
				sin[i], cos[i] = math.Sincos(-float64(float32(ps[t]) * fs[i]))
			}
			cacheRow := pt.row(int(ss[t]), int(ps[t])) * kd
			dst := out[t*width : (t+1)*width]
			copy(dst[qd+kd:], dvc[cacheRow:cacheRow+kd])
			for h := range nHead + nKV {
				var src []float32
				part, j, heads := 0, h, nHead
				if h < nHead {
					src = dqs[t*qd+h*headDim:]
				} else {
					part, j, heads, src = 1, h-nHead, nKV, dkc[cacheRow+(h-nHead)*headDim:]
				}
				for i := range half {
					x1, x2 := float64(src[i]), float64(src[i+half])
					row[i] = float32(x1*cos[i] - x2*sin[i])
					row[i+half] = float32(x2*cos[i] + x1*sin[i])
				}
				d := dst[h*headDim : (h+1)*headDim]
				w := norms[part]
				if w == nil {
					copy(d, row)
					continue
				}
				th := t*heads + j
				x, r := pres[part][th*headDim:(th+1)*headDim], rstds[part][th:th+1]
				if be.vec != nil {
					be.vec.rmsNormBackward(d, row, x, w, r, 1, false)
				} else {
					rmsNormBackwardRows(d, row, x, w, r, 0, 1, false)
				}
			}
		}
	})
}
