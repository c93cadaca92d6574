package kerneltest

import "math"

// The plain-loop float64 references below are the specification of every op
// in kernels.Ops. They favour obviousness over speed and share no code with
// any backend. Inputs are the values the backend actually holds (BF16
// operands already rounded), so the only difference a backend may show is
// its own float32 arithmetic.

// RefMatMul returns alpha·op(A)·op(B) + beta·C (m×n). With beta == 0, C is
// ignored entirely (it may hold NaN).
func RefMatMul(a, b, c []float64, m, n, k int, transA, transB bool, alpha, beta float64) []float64 {
	at := func(i, p int) float64 {
		if transA {
			return a[p*m+i]
		}
		return a[i*k+p]
	}
	bt := func(p, j int) float64 {
		if transB {
			return b[j*k+p]
		}
		return b[p*n+j]
	}
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for p := 0; p < k; p++ {
				s += at(i, p) * bt(p, j)
			}
			out[i*n+j] = alpha * s
			if beta != 0 {
				out[i*n+j] += beta * c[i*n+j]
			}
		}
	}
	return out
}

// RefGatherRows returns the n×cols matrix whose row i is table row idx[i].
func RefGatherRows(table []float64, idx []int32, n, cols int) []float64 {
	out := make([]float64, n*cols)
	for i := 0; i < n; i++ {
		copy(out[i*cols:(i+1)*cols], table[int(idx[i])*cols:])
	}
	return out
}

// RefRMSNorm returns x[r]/sqrt(mean(x[r]²)+eps)·w per row and the per-row
// 1/sqrt(mean(x[r]²)+eps).
func RefRMSNorm(x, w []float64, rows, dim int, eps float64) (out, rstd []float64) {
	out = make([]float64, rows*dim)
	rstd = make([]float64, rows)
	for r := 0; r < rows; r++ {
		ss := 0.0
		for i := 0; i < dim; i++ {
			ss += x[r*dim+i] * x[r*dim+i]
		}
		rstd[r] = 1 / math.Sqrt(ss/float64(dim)+eps)
		for i := 0; i < dim; i++ {
			out[r*dim+i] = x[r*dim+i] * rstd[r] * w[i]
		}
	}
	return out, rstd
}

// RopeAngle is the rotation angle of RoPE for position pos and inverse
// frequency invFreq. It is the float32 product, as HF transformers computes
// it (inv_freq @ position_ids in float32): at position 30000 the rounding
// of that product moves the angle by ~1e-3 rad, so matching HF means
// rounding it exactly the same way. Only the cos/sin are taken in float64.
func RopeAngle(pos int32, invFreq float32) float64 {
	return float64(float32(pos) * invFreq)
}

// RefRoPE returns x (nTok × nHead × headDim) rotated in rotate-half form:
// for i < headDim/2 the pair (x[i], x[i+half]) becomes
// (x[i]·cos − x[i+half]·sin, x[i+half]·cos + x[i]·sin) with angle
// RopeAngle(pos[t], invFreq[i]), negated when inverse is set.
func RefRoPE(x []float64, pos []int32, invFreq []float32, nTok, nHead, headDim int, inverse bool) []float64 {
	return RefRoPEPartial(x, pos, invFreq, nTok, nHead, headDim, headDim, inverse)
}

// RefRoPEPartial is RefRoPE on the first rotaryDim dims of each head only
// (partial rotary, HF's partial_rotary_factor): the pairs (i, i +
// rotaryDim/2) for i < rotaryDim/2 with invFreq[i]; the other dims are
// returned as they are.
func RefRoPEPartial(x []float64, pos []int32, invFreq []float32, nTok, nHead, headDim, rotaryDim int, inverse bool) []float64 {
	half := rotaryDim / 2
	out := append([]float64(nil), x...)
	for t := 0; t < nTok; t++ {
		for h := 0; h < nHead; h++ {
			base := (t*nHead + h) * headDim
			for i := 0; i < half; i++ {
				ang := RopeAngle(pos[t], invFreq[i])
				if inverse {
					ang = -ang
				}
				sin, cos := math.Sincos(ang)
				x1, x2 := x[base+i], x[base+i+half]
				out[base+i] = x1*cos - x2*sin
				out[base+i+half] = x2*cos + x1*sin
			}
		}
	}
	return out
}

// RefAddBias returns x with bias added to every row.
func RefAddBias(x, bias []float64, rows, cols int) []float64 {
	out := make([]float64, rows*cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			out[r*cols+c] = x[r*cols+c] + bias[c]
		}
	}
	return out
}

// RefAdd returns a + b.
func RefAdd(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] + b[i]
	}
	return out
}

// RefSwiGLU returns silu(gate)·up with silu(g) = g/(1+e^−g).
func RefSwiGLU(gate, up []float64) []float64 {
	out := make([]float64, len(gate))
	for i, g := range gate {
		out[i] = g / (1 + math.Exp(-g)) * up[i]
	}
	return out
}

// RefSigmoidGate returns x·σ(gate).
func RefSigmoidGate(x, gate []float64) []float64 {
	out := make([]float64, len(x))
	for i, g := range gate {
		out[i] = x[i] * sigmoid(g)
	}
	return out
}

// RefKVWrite returns cache (pg.Rows() × width) with row t of x stored at
// the row that holds position pos[t] of sequence seq[t].
func RefKVWrite(cache, x []float64, seq, pos []int32, pg Pages, nTok, width int) []float64 {
	out := append([]float64(nil), cache...)
	for t := 0; t < nTok; t++ {
		dst := pg.Row(int(seq[t]), int(pos[t])) * width
		copy(out[dst:dst+width], x[t*width:(t+1)*width])
	}
	return out
}

// RefAttention returns causal grouped-query attention: for token t and query
// head h, with KV head g = h/(nHead/nKV) and s_j = scale·q[t,h]·k[row_j,g]
// for j = 0..pos[t], row_j the cache row of position j of sequence seq[t],
// out[t,h] = Σ_j softmax(s)_j · v[row_j,g] and lse[t,h] = log Σ_j e^{s_j}.
func RefAttention(q, k, v []float64, seq, pos []int32, pg Pages, nTok, nHead, nKV, headDim int, scale float64) (out, lse []float64) {
	return RefAttentionVariant(q, k, v, seq, pos, pg, nTok, nHead, nKV, headDim, scale, RefVariant{})
}

// RefVariant is kernels.AttentionVariant as the references read it: a
// sliding window of Window keys (0: none) and one sink logit per query
// head (nil: none).
type RefVariant struct {
	Window int
	Sinks  []float64
}

// first is the first position a query at pos attends to.
func (rv RefVariant) first(pos int) int {
	if rv.Window > 0 {
		return max(0, pos-rv.Window+1)
	}
	return 0
}

// RefAttentionVariant is RefAttention under a variant: token t attends
// to positions first..pos[t] (first = pos[t]−Window+1 clipped at 0 with a
// window), and head h's sink logit σ_h joins the denominator unscaled:
// p_j = e^{s_j}/(Σ_k e^{s_k} + e^{σ_h}), lse = log(Σ_k e^{s_k} + e^{σ_h}).
func RefAttentionVariant(q, k, v []float64, seq, pos []int32, pg Pages, nTok, nHead, nKV, headDim int, scale float64, rv RefVariant) (out, lse []float64) {
	out = make([]float64, nTok*nHead*headDim)
	lse = make([]float64, nTok*nHead)
	group := nHead / nKV
	for t := 0; t < nTok; t++ {
		for h := 0; h < nHead; h++ {
			g := h / group
			qv := q[(t*nHead+h)*headDim:][:headDim]
			kvAt := func(cache []float64, j int) []float64 {
				return cache[(pg.Row(int(seq[t]), j)*nKV+g)*headDim:][:headDim]
			}
			lo, n := rv.first(int(pos[t])), int(pos[t])+1
			s := make([]float64, n)
			mx := math.Inf(-1)
			for j := lo; j < n; j++ {
				kj := kvAt(k, j)
				for d := range qv {
					s[j] += qv[d] * kj[d]
				}
				s[j] *= scale
				mx = math.Max(mx, s[j])
			}
			if rv.Sinks != nil {
				mx = math.Max(mx, rv.Sinks[h])
			}
			z := 0.0
			for j := lo; j < n; j++ {
				z += math.Exp(s[j] - mx)
			}
			if rv.Sinks != nil {
				z += math.Exp(rv.Sinks[h] - mx)
			}
			o := out[(t*nHead+h)*headDim:][:headDim]
			for j := lo; j < n; j++ {
				p := math.Exp(s[j]-mx) / z
				vj := kvAt(v, j)
				for d := range o {
					o[d] += p * vj[d]
				}
			}
			lse[t*nHead+h] = mx + math.Log(z)
		}
	}
	return out, lse
}

// RefLogSoftmaxGather returns, per row of logits (rows × vocab),
// log_softmax(row)[target] and the entropy −Σ p·log p of softmax(row).
func RefLogSoftmaxGather(logits []float64, target []int32, rows, vocab int) (logp, entropy []float64) {
	logp = make([]float64, rows)
	entropy = make([]float64, rows)
	for r := 0; r < rows; r++ {
		row := logits[r*vocab : (r+1)*vocab]
		mx := math.Inf(-1)
		for _, x := range row {
			mx = math.Max(mx, x)
		}
		z := 0.0
		for _, x := range row {
			z += math.Exp(x - mx)
		}
		lse := mx + math.Log(z)
		logp[r] = row[target[r]] - lse
		h := 0.0
		for _, x := range row {
			lp := x - lse
			h -= math.Exp(lp) * lp
		}
		entropy[r] = h
	}
	return logp, entropy
}

// RefCopyColumns returns dst with columns [dstOff, dstOff+width) of each
// of its rows replaced by columns [srcOff, srcOff+width) of src's.
func RefCopyColumns(dst, src []float64, rows, width, dstCols, dstOff, srcCols, srcOff int) []float64 {
	out := append([]float64(nil), dst...)
	for r := 0; r < rows; r++ {
		copy(out[r*dstCols+dstOff:r*dstCols+dstOff+width], src[r*srcCols+srcOff:])
	}
	return out
}
