package kerneltest

// The chunked form's backward, in float32, as
// kernels/cuda/gated_delta_chunked_backward.cu computes it. Within a
// chunk (linear_chunked.go's notation, G_L the last G, with
// M[t,s] = exp(G_t − G_s)·q̂_t·k̂_s for s ≤ t and Δ = (I + A)⁻¹R,
// R_t = β_t(v_t − exp(G_t)·S₀ᵀk̂_t)), given dO and dS_L (the gradient of
// the state after the chunk):
//
//	dΔ_s  = Σ_{t≥s} M[t,s]·dO_t + exp(G_L − G_s)·dS_Lᵀk̂_s
//	dR    = (I + A)⁻ᵀ·dΔ                     backward substitution
//	dM[t,s] = dO_t·Δ_s,   dA[t,s] = −dR_t·Δ_s
//	dS₀   = exp(G_L)·dS_L + Σ_t exp(G_t)·q̂_t dO_tᵀ − Σ_t β_t·exp(G_t)·k̂_t dR_tᵀ
//	dv_t  = β_t·dR_t
//
// and dq̂, dk̂, dβ and dG follow from M, A, R and the exponentials term by
// term; dg is the reverse running sum of dG within the chunk. The
// chunks are walked from the last, from the states at their starts
// (kept by a forward pass), dS₀ of one being dS_L of the one before.

// ChunkedGatedDeltaBackward returns dq̂, dk̂ (n × dimK), dv (n × dimV), dg,
// dβ (n) and the gradient of the initial state S for one head, from dO
// (n × dimV) and dSL (dimK × dimV, the final state's gradient); the
// operands are ChunkedGatedDelta's.
func ChunkedGatedDeltaBackward(q, k, v, g, beta, S, dO, dSL []float32, n, dimK, dimV int) (dq, dk, dv, dg, dbeta, dS []float32) {
	chunks := (n + DeltaChunk - 1) / DeltaChunk
	starts := make([]float32, chunks*dimK*dimV)
	st := append([]float32(nil), S...)
	for c := range chunks {
		copy(starts[c*dimK*dimV:], st)
		c0 := c * DeltaChunk
		L := min(DeltaChunk, n-c0)
		chunkedStep(q[c0*dimK:], k[c0*dimK:], v[c0*dimV:], g[c0:], beta[c0:], st, make([]float32, L*dimV), L, dimK, dimV)
	}
	dq, dk, dv = make([]float32, n*dimK), make([]float32, n*dimK), make([]float32, n*dimV)
	dg, dbeta = make([]float32, n), make([]float32, n)
	dS = append([]float32(nil), dSL...)
	for c := chunks - 1; c >= 0; c-- {
		c0 := c * DeltaChunk
		L := min(DeltaChunk, n-c0)
		dS = chunkBackward(q[c0*dimK:], k[c0*dimK:], v[c0*dimV:], g[c0:], beta[c0:], starts[c*dimK*dimV:(c+1)*dimK*dimV], dO[c0*dimV:], dS,
			dq[c0*dimK:], dk[c0*dimK:], dv[c0*dimV:], dg[c0:], dbeta[c0:], L, dimK, dimV)
	}
	return dq, dk, dv, dg, dbeta, dS
}

// chunkBackward does one chunk: it writes the chunk's gradients and
// returns dS₀.
func chunkBackward(q, k, v, g, beta, S0, dO, dSL, dq, dk, dv, dg, dbeta []float32, L, dimK, dimV int) []float32 {
	G := make([]float32, L)
	var acc float32
	for t := range L {
		acc += g[t]
		G[t] = acc
	}
	gl := G[L-1]
	row := func(x []float32, t, w int) []float32 { return x[t*w : (t+1)*w] }
	// Recompute A, U, W, Δ = U − W·S₀ and M, as the forward does.
	A := make([]float32, L*L)
	M := make([]float32, L*L)
	for t := range L {
		for s := range L {
			if s < t {
				A[t*L+s] = beta[t] * exp32(G[t]-G[s]) * dot32(row(k, t, dimK), row(k, s, dimK))
			}
			if s <= t {
				M[t*L+s] = exp32(G[t]-G[s]) * dot32(row(q, t, dimK), row(k, s, dimK))
			}
		}
	}
	D := make([]float32, L*dimV) // U, then Δ
	W := make([]float32, L*dimK)
	for t := range L {
		for j := range dimV {
			x := beta[t] * v[t*dimV+j]
			for s := range t {
				x -= A[t*L+s] * D[s*dimV+j]
			}
			D[t*dimV+j] = x
		}
		for i := range dimK {
			x := beta[t] * exp32(G[t]) * k[t*dimK+i]
			for s := range t {
				x -= A[t*L+s] * W[s*dimK+i]
			}
			W[t*dimK+i] = x
		}
	}
	// sk[t] = S₀ᵀk̂_t (dimV), the inter-chunk prediction without its decay.
	sk := make([]float32, L*dimV)
	for t := range L {
		for j := range dimV {
			var ws, p float32
			for i := range dimK {
				ws += W[t*dimK+i] * S0[i*dimV+j]
				p += k[t*dimK+i] * S0[i*dimV+j]
			}
			D[t*dimV+j] -= ws
			sk[t*dimV+j] = p
		}
	}
	// dΔ, then dR by backward substitution through (I + A)ᵀ.
	dR := make([]float32, L*dimV)
	for s := range L {
		for j := range dimV {
			var x, y float32
			for t := s; t < L; t++ {
				x += M[t*L+s] * dO[t*dimV+j]
			}
			for i := range dimK {
				y += k[s*dimK+i] * dSL[i*dimV+j]
			}
			dR[s*dimV+j] = x + exp32(gl-G[s])*y
		}
	}
	for s := L - 1; s >= 0; s-- {
		for j := range dimV {
			for t := s + 1; t < L; t++ {
				dR[s*dimV+j] -= A[t*L+s] * dR[t*dimV+j]
			}
		}
	}
	dM := make([]float32, L*L)
	dA := make([]float32, L*L)
	for t := range L {
		for s := range L {
			if s <= t {
				dM[t*L+s] = dot32(row(dO, t, dimV), row(D, s, dimV))
			}
			if s < t {
				dA[t*L+s] = -dot32(row(dR, t, dimV), row(D, s, dimV))
			}
		}
	}
	dG := make([]float32, L)
	for t := range L {
		// O's inter-chunk term and R's: exp(G_t)·q̂_tᵀS₀dO_t and
		// −β_t·exp(G_t)·k̂_tᵀS₀dR_t, both also in dq̂ / dk̂.
		var qsd, ksd float32
		for i := range dimK {
			var sdo, sdr float32
			for j := range dimV {
				sdo += S0[i*dimV+j] * dO[t*dimV+j]
				sdr += S0[i*dimV+j] * dR[t*dimV+j]
			}
			dq[t*dimK+i] = exp32(G[t]) * sdo
			dk[t*dimK+i] = -beta[t] * exp32(G[t]) * sdr
			qsd += q[t*dimK+i] * sdo
			ksd += k[t*dimK+i] * sdr
		}
		dG[t] += exp32(G[t])*qsd - beta[t]*exp32(G[t])*ksd
		var db float32
		for j := range dimV {
			dv[t*dimV+j] = beta[t] * dR[t*dimV+j]
			db += dR[t*dimV+j] * (v[t*dimV+j] - exp32(G[t])*sk[t*dimV+j])
		}
		dbeta[t] = db
	}
	for t := range L {
		for s := 0; s <= t; s++ {
			e := exp32(G[t] - G[s])
			for i := range dimK {
				dq[t*dimK+i] += dM[t*L+s] * e * k[s*dimK+i]
				dk[s*dimK+i] += dM[t*L+s] * e * q[t*dimK+i]
			}
			dG[t] += dM[t*L+s] * M[t*L+s]
			dG[s] -= dM[t*L+s] * M[t*L+s]
			if s == t {
				continue
			}
			ea := beta[t] * e
			for i := range dimK {
				dk[t*dimK+i] += dA[t*L+s] * ea * k[s*dimK+i]
				dk[s*dimK+i] += dA[t*L+s] * ea * k[t*dimK+i]
			}
			dbeta[t] += dA[t*L+s] * e * dot32(row(k, t, dimK), row(k, s, dimK))
			dG[t] += dA[t*L+s] * A[t*L+s]
			dG[s] -= dA[t*L+s] * A[t*L+s]
		}
	}
	// S_L = exp(G_L)·S₀ + Σ_s exp(G_L − G_s)·k̂_s Δ_sᵀ.
	var ds0 float32
	for e := range S0 {
		ds0 += dSL[e] * S0[e]
	}
	dG[L-1] += exp32(gl) * ds0
	for s := range L {
		e := exp32(gl - G[s])
		var cs float32
		for i := range dimK {
			var x float32
			for j := range dimV {
				x += dSL[i*dimV+j] * D[s*dimV+j]
			}
			dk[s*dimK+i] += e * x
			cs += k[s*dimK+i] * x
		}
		dG[L-1] += e * cs
		dG[s] -= e * cs
	}
	acc = 0
	for t := L - 1; t >= 0; t-- {
		acc += dG[t]
		dg[t] = acc
	}
	dS0 := make([]float32, dimK*dimV)
	for i := range dimK {
		for j := range dimV {
			x := exp32(gl) * dSL[i*dimV+j]
			for t := range L {
				x += exp32(G[t]) * (q[t*dimK+i]*dO[t*dimV+j] - beta[t]*k[t*dimK+i]*dR[t*dimV+j])
			}
			dS0[i*dimV+j] = x
		}
	}
	return dS0
}
