package kerneltest

import "math"

// Plain-loop float64 references of kernels.MoEOps, written from the ops'
// doc comments.

// RefMoERoute returns the top-k experts of each token (by float64 softmax
// probability, the lower index first among equals) and their weights,
// renormalised over the chosen ones with normTopK. With replay non-nil
// the experts are those and only the weights are computed.
func RefMoERoute(logits []float64, replay []int32, n, nExperts, topK int, normTopK bool) (experts []int32, weights []float64) {
	experts = make([]int32, n*topK)
	weights = make([]float64, n*topK)
	for t := range n {
		p := refSoftmax(logits[t*nExperts : (t+1)*nExperts])
		e := experts[t*topK : (t+1)*topK]
		if replay != nil {
			copy(e, replay[t*topK:(t+1)*topK])
		} else {
			used := make([]bool, nExperts)
			for j := range e {
				best := -1
				for i, v := range p {
					if !used[i] && (best < 0 || v > p[best]) {
						best = i
					}
				}
				used[best] = true
				e[j] = int32(best)
			}
		}
		s := 0.0
		for _, ej := range e {
			s += p[ej]
		}
		for j, ej := range e {
			weights[t*topK+j] = p[ej]
			if normTopK {
				weights[t*topK+j] /= s
			}
		}
	}
	return experts, weights
}

func refSoftmax(row []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, v)
	}
	p := make([]float64, len(row))
	s := 0.0
	for i, v := range row {
		p[i] = math.Exp(v - m)
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

// RefMoERouteBackward returns dlogits for fixed experts: the chain rule
// through w_j = p[e_j] (/ Σ_k p[e_k]) and the softmax, each written out
// as a full Jacobian product rather than the closed forms a backend uses;
// dprobs (nil for none) adds to every token's dL/dp.
func RefMoERouteBackward(dweights, dprobs, logits []float64, experts []int32, n, nExperts, topK int, normTopK bool) []float64 {
	dl := make([]float64, n*nExperts)
	for t := range n {
		p := refSoftmax(logits[t*nExperts : (t+1)*nExperts])
		e := experts[t*topK : (t+1)*topK]
		dw := dweights[t*topK : (t+1)*topK]
		s := 0.0
		for _, ej := range e {
			s += p[ej]
		}
		// dL/dp_i = Σ_j dw_j · ∂w_j/∂p_i.
		dp := make([]float64, nExperts)
		copy(dp, dprobs)
		for j, ej := range e {
			for i := range nExperts {
				var d float64 // ∂w_j/∂p_i
				if !normTopK {
					if int(ej) == i {
						d = 1
					}
				} else {
					if int(ej) == i {
						d += 1 / s
					}
					for _, ek := range e {
						if int(ek) == i {
							d -= p[ej] / (s * s)
						}
					}
				}
				dp[i] += dw[j] * d
			}
		}
		// ∂p_i/∂z_k = p_i·(δ_ik − p_k).
		for k := range nExperts {
			for i := range nExperts {
				d := -p[i] * p[k]
				if i == k {
					d += p[i]
				}
				dl[t*nExperts+k] += dp[i] * d
			}
		}
	}
	return dl
}

// RefMoEGroup returns the grouped order of experts' assignments: offsets,
// the token of each permuted row, and the permuted row of each assignment.
func RefMoEGroup(experts []int32, n, nExperts, topK int) (offsets, tokens, rows []int32) {
	offsets = make([]int32, nExperts+1)
	tokens = make([]int32, n*topK)
	rows = make([]int32, n*topK)
	r := int32(0)
	for e := range nExperts {
		offsets[e] = r
		for a, ea := range experts {
			if int(ea) == e {
				tokens[r] = int32(a / topK)
				rows[a] = r
				r++
			}
		}
	}
	offsets[nExperts] = r
	return offsets, tokens, rows
}

// RefGroupedMatMul returns C with each expert's rows multiplied by its
// matrix: C[r] = alpha·A[r]·op(B_e) + beta·C[r].
func RefGroupedMatMul(c, a, b []float64, offsets []int32, nExperts, n, k int, transB bool, alpha, beta float64) []float64 {
	out := append([]float64(nil), c...)
	for e := range nExperts {
		be := b[e*k*n : (e+1)*k*n]
		for r := offsets[e]; r < offsets[e+1]; r++ {
			for j := range n {
				s := 0.0
				for i := range k {
					bv := be[i*n+j]
					if transB {
						bv = be[j*k+i]
					}
					s += a[int(r)*k+i] * bv
				}
				out[int(r)*n+j] = alpha*s + beta*c[int(r)*n+j]
			}
		}
	}
	return out
}

// RefGroupedMatMulTN returns C_e = alpha·A_eᵀ·B_e + beta·C_e per expert.
func RefGroupedMatMulTN(c, a, b []float64, offsets []int32, nExperts, m, n int, alpha, beta float64) []float64 {
	out := make([]float64, len(c))
	for e := range nExperts {
		for i := range m {
			for j := range n {
				s := 0.0
				for r := offsets[e]; r < offsets[e+1]; r++ {
					s += a[int(r)*m+i] * b[int(r)*n+j]
				}
				idx := e*m*n + i*n + j
				out[idx] = alpha*s + beta*c[idx]
			}
		}
	}
	return out
}

// RefMoECombine returns out[t] = Σ_j w_j·x[rows[t·topK+j]] (w = 1 when
// weights is nil).
func RefMoECombine(x, weights []float64, rows []int32, n, topK, cols int) []float64 {
	out := make([]float64, n*cols)
	for t := range n {
		for j := range topK {
			w := 1.0
			if weights != nil {
				w = weights[t*topK+j]
			}
			r := int(rows[t*topK+j])
			for i := range cols {
				out[t*cols+i] += w * x[r*cols+i]
			}
		}
	}
	return out
}

// RefMoECombineBackward returns dx (every permuted row) and dweights.
func RefMoECombineBackward(dout, x, weights []float64, rows []int32, n, topK, cols int) (dx, dweights []float64) {
	dx = make([]float64, n*topK*cols)
	dweights = make([]float64, n*topK)
	for t := range n {
		for j := range topK {
			a := t*topK + j
			r := int(rows[a])
			for i := range cols {
				dx[r*cols+i] = weights[a] * dout[t*cols+i]
				dweights[a] += dout[t*cols+i] * x[r*cols+i]
			}
		}
	}
	return dx, dweights
}
