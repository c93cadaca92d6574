package kerneltest

import "math"

// References of kernels.FusedOps and kernels.LoRAOps (and their
// backwards): the unfused computations written out as plain loops.

// RefAddRMSNorm returns s = f32(x + r) (x itself when r is nil) and
// RMSNorm(s)·w with its rstd: the add is rounded to float32 first, because
// the residual stream the op writes is float32 and the norm reads it.
func RefAddRMSNorm(x, r, w []float64, rows, dim int, eps float64) (sum, out, rstd []float64) {
	sum = append([]float64(nil), x...)
	if r != nil {
		for i := range sum {
			sum[i] = float64(float32(x[i] + r[i]))
		}
	}
	out, rstd = RefRMSNorm(sum, w, rows, dim, eps)
	return sum, out, rstd
}

// RefSwiGLURows returns silu(gate)·up (rows × width) for gate and up the
// two halves of each row of gateUp (rows × 2·width).
func RefSwiGLURows(gateUp []float64, rows, width int) []float64 {
	out := make([]float64, rows*width)
	for r := 0; r < rows; r++ {
		for j := 0; j < width; j++ {
			g, u := gateUp[r*2*width+j], gateUp[r*2*width+width+j]
			out[r*width+j] = g / (1 + math.Exp(-g)) * u
		}
	}
	return out
}

// RefSwiGLURowsBackward returns dGateUp (rows × 2·width): dgate in the
// first half of each row, dup in the second.
func RefSwiGLURowsBackward(dy, gateUp []float64, rows, width int) []float64 {
	d := make([]float64, rows*2*width)
	for r := 0; r < rows; r++ {
		for j := 0; j < width; j++ {
			g, u, dv := gateUp[r*2*width+j], gateUp[r*2*width+width+j], dy[r*width+j]
			s := 1 / (1 + math.Exp(-g))
			d[r*2*width+j] = dv * u * s * (1 + g*(1-s))
			d[r*2*width+width+j] = dv * g * s
		}
	}
	return d
}

// RefLoRAPart is a kernels.LoRAPart's values: B (Out × Rank), and which
// of the op's Y matrices (rows × YCols) its output columns lie in.
type RefLoRAPart struct {
	B              []float64
	Rank, Out      int
	Scale          float64
	Y, YCols, YOff int
}

// RefLoRAShrink returns x·Aᵀ (rows × ranks) for x rows × in, A ranks × in.
func RefLoRAShrink(x, a []float64, rows, in, ranks int) []float64 {
	xa := make([]float64, rows*ranks)
	for r := 0; r < rows; r++ {
		for k := 0; k < ranks; k++ {
			s := 0.0
			for i := 0; i < in; i++ {
				s += x[r*in+i] * a[k*in+i]
			}
			xa[r*ranks+k] = s
		}
	}
	return xa
}

// RefLoRAExpand returns the Y matrices ys after Y[r, YOff+j] += Scale·Σ_k
// xa[r, o+k]·B[j, k] for every part, o being the part's first column of
// xa.
func RefLoRAExpand(xa []float64, parts []RefLoRAPart, ys [][]float64, rows int) [][]float64 {
	ranks := 0
	for _, p := range parts {
		ranks += p.Rank
	}
	out := make([][]float64, len(ys))
	for i, y := range ys {
		out[i] = append([]float64(nil), y...)
	}
	o := 0
	for _, p := range parts {
		y := out[p.Y]
		for r := 0; r < rows; r++ {
			for j := 0; j < p.Out; j++ {
				s := 0.0
				for k := 0; k < p.Rank; k++ {
					s += xa[r*ranks+o+k] * p.B[j*p.Rank+k]
				}
				y[r*p.YCols+p.YOff+j] += p.Scale * s
			}
		}
		o += p.Rank
	}
	return out
}

// RefLoRAExpandBackward returns dxa (rows × ranks) and each part's B
// gradient (Out × Rank, before accumulation), ys holding the output
// gradients.
func RefLoRAExpandBackward(xa []float64, parts []RefLoRAPart, ys [][]float64, rows int) (dxa []float64, dbs [][]float64) {
	ranks := 0
	for _, p := range parts {
		ranks += p.Rank
	}
	dxa = make([]float64, rows*ranks)
	o := 0
	for _, p := range parts {
		db := make([]float64, p.Out*p.Rank)
		for r := 0; r < rows; r++ {
			for k := 0; k < p.Rank; k++ {
				s := 0.0
				for j := 0; j < p.Out; j++ {
					dy := ys[p.Y][r*p.YCols+p.YOff+j]
					s += dy * p.B[j*p.Rank+k]
					db[j*p.Rank+k] += p.Scale * dy * xa[r*ranks+o+k]
				}
				dxa[r*ranks+o+k] = p.Scale * s
			}
		}
		dbs = append(dbs, db)
		o += p.Rank
	}
	return dxa, dbs
}

// RefLoRAShrinkBackward returns dxa·A (rows × in) and dxaᵀ·x (ranks × in).
func RefLoRAShrinkBackward(dxa, x, a []float64, rows, in, ranks int) (dx, da []float64) {
	dx = make([]float64, rows*in)
	da = make([]float64, ranks*in)
	for r := 0; r < rows; r++ {
		for k := 0; k < ranks; k++ {
			g := dxa[r*ranks+k]
			for i := 0; i < in; i++ {
				dx[r*in+i] += g * a[k*in+i]
				da[k*in+i] += g * x[r*in+i]
			}
		}
	}
	return dx, da
}

// RefAttentionInputs returns AttentionInputs' q (nTok × nHead × headDim),
// gate (the same shape; nil unless gated), the caches after the k and v
// writes, qPre, kPre, rstdQ and rstdK, by splitting qkv (a gated q part
// holds per head the query, then the gate) and applying RefAddBias,
// RefRMSNorm, RefRoPEPartial and RefKVWrite in turn (bias, qNorm, kNorm
// nil: skipped).
func RefAttentionInputs(qkv, kCache, vCache, qBias, kBias, vBias, qNorm, kNorm []float64, invFreq []float32, seq, pos []int32, pg Pages,
	nTok, nHead, nKV, headDim, rotaryDim int, gated bool, eps float64) (q, gate, kc, vc, qPre, kPre, rstdQ, rstdK []float64) {
	qd, kd := nHead*headDim, nKV*headDim
	qw := qd
	if gated {
		qw = 2 * qd
	}
	width := qw + 2*kd
	part := func(off, cols int, bias []float64) []float64 {
		x := make([]float64, nTok*cols)
		for t := 0; t < nTok; t++ {
			copy(x[t*cols:(t+1)*cols], qkv[t*width+off:t*width+off+cols])
		}
		if bias != nil {
			x = RefAddBias(x, bias, nTok, cols)
		}
		return x
	}
	qPre, kPre = part(0, qw, qBias), part(qw, kd, kBias)
	v := part(qw+kd, kd, vBias)
	if gated {
		qPre, gate = splitHalves(qPre, nTok*nHead, headDim)
	}
	q, k := qPre, kPre
	if qNorm != nil {
		q, rstdQ = RefRMSNorm(qPre, qNorm, nTok*nHead, headDim, eps)
		k, rstdK = RefRMSNorm(kPre, kNorm, nTok*nKV, headDim, eps)
	}
	q = RefRoPEPartial(q, pos, invFreq, nTok, nHead, headDim, rotaryDim, false)
	k = RefRoPEPartial(k, pos, invFreq, nTok, nKV, headDim, rotaryDim, false)
	return q, gate, RefKVWrite(kCache, k, seq, pos, pg, nTok, kd), RefKVWrite(vCache, v, seq, pos, pg, nTok, kd), qPre, kPre, rstdQ, rstdK
}

// splitHalves splits each of rows rows of 2·width into its first and
// second halves.
func splitHalves(x []float64, rows, width int) (first, second []float64) {
	first, second = make([]float64, rows*width), make([]float64, rows*width)
	for r := 0; r < rows; r++ {
		copy(first[r*width:(r+1)*width], x[2*r*width:])
		copy(second[r*width:(r+1)*width], x[(2*r+1)*width:])
	}
	return first, second
}

// RefAttentionInputsBackward returns dqkv: the k and v rows of the cache
// gradients gathered at each token's cache row, q and k through
// RefRoPEPartial's inverse and, with qNorm not nil, RefRMSNormBackward,
// then joined per token as q | k | v, each q head followed by its head of
// dgate when dgate is not nil.
func RefAttentionInputsBackward(dq, dgate, dkCache, dvCache, qPre, kPre, rstdQ, rstdK, qNorm, kNorm []float64, invFreq []float32, seq, pos []int32,
	pg Pages, nTok, nHead, nKV, headDim, rotaryDim int) []float64 {
	qd, kd := nHead*headDim, nKV*headDim
	gather := func(c []float64) []float64 {
		x := make([]float64, nTok*kd)
		for t := 0; t < nTok; t++ {
			r := pg.Row(int(seq[t]), int(pos[t]))
			copy(x[t*kd:(t+1)*kd], c[r*kd:(r+1)*kd])
		}
		return x
	}
	dk, dv := gather(dkCache), gather(dvCache)
	dq = RefRoPEPartial(dq, pos, invFreq, nTok, nHead, headDim, rotaryDim, true)
	dk = RefRoPEPartial(dk, pos, invFreq, nTok, nKV, headDim, rotaryDim, true)
	if qNorm != nil {
		dq = RefRMSNormBackward(dq, qPre, qNorm, rstdQ, nTok*nHead, headDim)
		dk = RefRMSNormBackward(dk, kPre, kNorm, rstdK, nTok*nKV, headDim)
	}
	qw := qd
	if dgate != nil {
		qw = 2 * qd
		joined := make([]float64, nTok*qw)
		for r := 0; r < nTok*nHead; r++ {
			copy(joined[2*r*headDim:], dq[r*headDim:(r+1)*headDim])
			copy(joined[(2*r+1)*headDim:], dgate[r*headDim:(r+1)*headDim])
		}
		dq = joined
	}
	width := qw + 2*kd
	out := make([]float64, nTok*width)
	for t := 0; t < nTok; t++ {
		copy(out[t*width:], dq[t*qw:(t+1)*qw])
		copy(out[t*width+qw:], dk[t*kd:(t+1)*kd])
		copy(out[t*width+qw+kd:], dv[t*kd:(t+1)*kd])
	}
	return out
}
