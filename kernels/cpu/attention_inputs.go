package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// rotaryHalf checks AttentionInputs' head shape and returns rotaryDim/2,
// the number of rotated pairs (and of invFreq entries).
func rotaryHalf(op string, headDim, rotaryDim int) int {
	if headDim%2 != 0 || rotaryDim%2 != 0 || rotaryDim <= 0 || rotaryDim > headDim {
		panic(fmt.Sprintf("cpu.%s: headDim %d, rotaryDim %d: want both even and 0 < rotaryDim ≤ headDim", op, headDim, rotaryDim))
	}
	return rotaryDim / 2
}

// qHeadStride is the width of one q head in a row of qkv: the query, and
// its output gate after it when the attention is gated.
func qHeadStride(headDim int, gated bool) int {
	if gated {
		return 2 * headDim
	}
	return headDim
}

// AttentionInputs runs each token's heads through bias, norm and RoPE in a
// scratch row, with the unfused ops' arithmetic: the norm as RMSNorm's
// (C kernel or Go), the rotation in float64 as RoPE's.
func (be *Backend) AttentionInputs(q, gate, qPre, kPre, rstdQ, rstdK, kCache, vCache, qkv, qBias, kBias, vBias, qNorm, kNorm, invFreq, seq, pos kernels.Buffer,
	pages kernels.KVPages, nTok, nHead, nKV, headDim, rotaryDim int, eps float32) {
	const op = "AttentionInputs"
	positive(op, nTok, nHead, nKV, headDim)
	half := rotaryHalf(op, headDim, rotaryDim)
	if (qNorm == nil) != (kNorm == nil) {
		panic(fmt.Sprintf("cpu.%s: qNorm and kNorm must both be set or both nil", op))
	}
	qs0 := qHeadStride(headDim, gate != nil)
	qd, kd, qw := nHead*headDim, nKV*headDim, nHead*qs0
	width := qw + 2*kd
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
	// qkv, gate, qPre and kPre may each be BF16 (a bf16 model's
	// activations between ops): read as stored, written rounded once.
	src := floats(op, "qkv", qkv, nTok*width)
	qs, gs := floats(op, "q", q, nTok*qd), opt("gate", gate, nTok*qd)
	bf16Query(op, q, kCache, headDim)
	qPres, kPres, rqs, rks := opt("qPre", qPre, nTok*qd), opt("kPre", kPre, nTok*kd), optOut("rstdQ", rstdQ, nTok*nHead), optOut("rstdK", rstdK, nTok*nKV)
	roundGate, roundPre := isBF16(gate), [2]bool{isBF16(qPre), isBF16(kPre)}
	biases := [3][]float32{opt("qBias", qBias, qw), opt("kBias", kBias, kd), opt("vBias", vBias, kd)}
	norms := [2][]float32{opt("qNorm", qNorm, headDim), opt("kNorm", kNorm, headDim)}
	fs := floats(op, "invFreq", invFreq, half)
	ss, ps := ints(op, "seq", seq, nTok), ints(op, "pos", pos, nTok)
	kc, vc := floats(op, "kCache", kCache, kCache.Len()), floats(op, "vCache", vCache, vCache.Len())
	pt := pagesOf(op, pages, len(kc), kd)
	if vCache.Len() != len(kc) || vCache.DType() != kCache.DType() {
		panic(fmt.Sprintf("cpu.%s: kCache is %v × %d, vCache %v × %d", op, kCache.DType(), len(kc), vCache.DType(), vCache.Len()))
	}
	// A BF16 cache (the sampler's where the backend says so) stores each
	// value rounded to nearest even, as KVWrite does; so does a BF16 q.
	exact := func(dst []float32, i int, v float32) { dst[i] = v }
	rounded := func(dst []float32, i int, v float32) { dst[i] = roundBF16(v) }
	store, storeQ := exact, exact
	if kCache.DType() == kernels.BF16 {
		store = rounded
	}
	if q.DType() == kernels.BF16 {
		storeQ = rounded
	}
	pt.checkWrites(op, ss, ps)
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
				// part 0: q, 1: k, 2: v; j is the head within its part,
				// off its offset in the row (and in its bias).
				part, j, off := 0, h, h*qs0
				switch {
				case h >= nHead+nKV:
					part, j = 2, h-nHead-nKV
					off = qw + kd + j*headDim
				case h >= nHead:
					part, j = 1, h-nHead
					off = qw + j*headDim
				}
				b := biases[part]
				boff := off
				if part > 0 {
					boff = j * headDim
				}
				copy(row, src[t*width+off:t*width+off+headDim])
				if b != nil {
					for i := range row {
						row[i] += b[boff+i]
					}
				}
				var dst, pre, rs []float32
				switch part {
				case 0:
					dst, pre, rs = qs[(t*nHead+j)*headDim:], qPres, rqs
					if gs != nil {
						g := gs[(t*nHead+j)*headDim : (t*nHead+j+1)*headDim]
						for i := range g {
							v := src[t*width+off+headDim+i]
							if b != nil {
								v += b[boff+headDim+i]
							}
							g[i] = roundIf(roundGate, v)
						}
					}
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
					p := pre[(t*heads+j)*headDim : (t*heads+j+1)*headDim]
					for i, v := range row {
						p[i] = roundIf(roundPre[part], v)
					}
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
					put = storeQ
				}
				for i := range half {
					x1, x2 := float64(row[i]), float64(row[i+half])
					put(dst, i, float32(x1*cos[i]-x2*sin[i]))
					put(dst, i+half, float32(x2*cos[i]+x1*sin[i]))
				}
				for i := 2 * half; i < headDim; i++ {
					put(dst, i, row[i])
				}
			}
		}
	})
}

// AttentionInputsBackward gathers, rotates back and un-norms each token's
// heads in a scratch row, with the unfused ops' arithmetic (RoPE's float64
// rotation, RMSNormBackward's C kernel or float64 Go path).
func (be *Backend) AttentionInputsBackward(dqkv, dq, dgate, dkCache, dvCache, qPre, kPre, rstdQ, rstdK, qNorm, kNorm, invFreq, seq, pos kernels.Buffer,
	pages kernels.KVPages, nTok, nHead, nKV, headDim, rotaryDim int) {
	const op = "AttentionInputsBackward"
	positive(op, nTok, nHead, nKV, headDim)
	half := rotaryHalf(op, headDim, rotaryDim)
	if (qNorm == nil) != (kNorm == nil) {
		panic(fmt.Sprintf("cpu.%s: qNorm and kNorm must both be set or both nil", op))
	}
	qs0 := qHeadStride(headDim, dgate != nil)
	qd, kd, qw := nHead*headDim, nKV*headDim, nHead*qs0
	width := qw + 2*kd
	// dqkv, dq, dgate, qPre and kPre may each be BF16: read as stored,
	// dqkv's elements rounded once each, after the whole row is computed.
	out, roundOut := floats(op, "dqkv", dqkv, nTok*width), isBF16(dqkv)
	dqs := floats(op, "dq", dq, nTok*qd)
	var dgs []float32
	if dgate != nil {
		dgs = floats(op, "dgate", dgate, nTok*qd)
	}
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
	pt.checkWrites(op, ss, ps)
	be.parallel(nTok, 20*width, func(lo, hi int) {
		sin, cos := make([]float64, half), make([]float64, half)
		row := make([]float32, headDim)
		for t := lo; t < hi; t++ {
			for i := range half {
				sin[i], cos[i] = math.Sincos(-float64(float32(ps[t]) * fs[i]))
			}
			cacheRow := pt.row(int(ss[t]), int(ps[t])) * kd
			dst := out[t*width : (t+1)*width]
			copy(dst[qw+kd:], dvc[cacheRow:cacheRow+kd])
			for h := range nHead + nKV {
				var src, d []float32
				part, j, heads := 0, h, nHead
				if h < nHead {
					src, d = dqs[t*qd+h*headDim:], dst[h*qs0:h*qs0+headDim]
					if dgs != nil {
						copy(dst[h*qs0+headDim:(h+1)*qs0], dgs[t*qd+h*headDim:])
					}
				} else {
					part, j, heads = 1, h-nHead, nKV
					src, d = dkc[cacheRow+j*headDim:], dst[qw+j*headDim:qw+(j+1)*headDim]
				}
				for i := range half {
					x1, x2 := float64(src[i]), float64(src[i+half])
					row[i] = float32(x1*cos[i] - x2*sin[i])
					row[i+half] = float32(x2*cos[i] + x1*sin[i])
				}
				copy(row[2*half:], src[2*half:headDim])
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
			if roundOut {
				for i, v := range dst {
					dst[i] = roundBF16(v)
				}
			}
		}
	})
}

// isBF16 reports whether an optional operand is a BF16 buffer.
func isBF16(b kernels.Buffer) bool { return b != nil && b.DType() == kernels.BF16 }
