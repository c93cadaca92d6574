package kerneltest

import "math"

// Plain-loop float64 references of kernels.LinearOps, written from the
// ops' doc comments. Runs are (first, count, init, final) quadruples as in
// kernels.LinearOps; states are slots × … arrays updated in place.

// LinearRun is one run of a LinearOps call.
type LinearRun struct{ First, Count, Init, Final int }

// flattenRuns is the runs operand.
func flattenRuns(runs []LinearRun) []int32 {
	out := make([]int32, 0, 4*len(runs))
	for _, r := range runs {
		out = append(out, int32(r.First), int32(r.Count), int32(r.Init), int32(r.Final))
	}
	return out
}

func refSilu(x float64) float64 { return x / (1 + math.Exp(-x)) }

// refSiluGrad is d silu(x)/dx.
func refSiluGrad(x float64) float64 {
	s := 1 / (1 + math.Exp(-x))
	return s * (1 + x*(1-s))
}

// convInputs returns u for a run, indexed u[i+kernel−1] for i in
// [−(kernel−1), count): the initial state's rows, then the run's tokens.
func convInputs(x, convState []float64, r LinearRun, channels, kernel, c int) []float64 {
	u := make([]float64, r.Count+kernel-1)
	for m := 0; m < kernel-1; m++ {
		if r.Init >= 0 {
			u[m] = convState[(r.Init*(kernel-1)+m)*channels+c]
		}
	}
	for i := range r.Count {
		u[kernel-1+i] = x[(r.First+i)*channels+c]
	}
	return u
}

// convBiasOf is bias[c], or 0 for no bias (nil).
func convBiasOf(bias []float64, c int) float64 {
	if bias == nil {
		return 0
	}
	return bias[c]
}

// RefCausalConv1D returns out (nTok × channels; rows no run covers stay 0)
// and writes each run's final conv state into convState. bias may be nil.
func RefCausalConv1D(x, w, bias, convState []float64, runs []LinearRun, nTok, channels, kernel int) []float64 {
	out := make([]float64, nTok*channels)
	finals := map[int][]float64{}
	for _, r := range runs {
		fin := make([]float64, (kernel-1)*channels)
		for c := range channels {
			u := convInputs(x, convState, r, channels, kernel, c)
			for i := range r.Count {
				p := convBiasOf(bias, c)
				for j := range kernel {
					p += w[c*kernel+j] * u[i+j]
				}
				out[(r.First+i)*channels+c] = refSilu(p)
			}
			for m := 0; m < kernel-1; m++ {
				fin[m*channels+c] = u[r.Count+m]
			}
		}
		if r.Final >= 0 {
			finals[r.Final] = fin
		}
	}
	// Every run reads its initial state before any final state is written.
	for s, fin := range finals {
		copy(convState[s*(kernel-1)*channels:], fin)
	}
	return out
}

// RefCausalConv1DBackward returns dx and adds the initial states'
// gradients into dConvState (read at final slots first).
func RefCausalConv1DBackward(dConvState, dout, x, w, bias, convState []float64, runs []LinearRun, nTok, channels, kernel int) []float64 {
	dx := make([]float64, nTok*channels)
	dInit := make([]float64, len(dConvState))
	for _, r := range runs {
		for c := range channels {
			u := convInputs(x, convState, r, channels, kernel, c)
			du := make([]float64, len(u))
			if r.Final >= 0 {
				for m := 0; m < kernel-1; m++ {
					du[r.Count+m] += dConvState[(r.Final*(kernel-1)+m)*channels+c]
				}
			}
			for i := range r.Count {
				p := convBiasOf(bias, c)
				for j := range kernel {
					p += w[c*kernel+j] * u[i+j]
				}
				dp := dout[(r.First+i)*channels+c] * refSiluGrad(p)
				for j := range kernel {
					du[i+j] += w[c*kernel+j] * dp
				}
			}
			for i := range r.Count {
				dx[(r.First+i)*channels+c] = du[kernel-1+i]
			}
			if r.Init >= 0 {
				for m := 0; m < kernel-1; m++ {
					dInit[(r.Init*(kernel-1)+m)*channels+c] += du[m]
				}
			}
		}
	}
	for i := range dInit {
		dConvState[i] += dInit[i]
	}
	return dx
}

// DeltaShape names the sizes of a GatedDeltaRule call.
type DeltaShape struct{ NHeadK, NHeadV, DimK, DimV int }

func (s DeltaShape) width() int { return 2*s.NHeadK*s.DimK + s.NHeadV*s.DimV }

// l2Scaled returns x/sqrt(Σx² + 1e-6)·scale and its 1/sqrt(Σx²+1e-6).
func l2Scaled(x []float64, scale float64) ([]float64, float64) {
	ss := 0.0
	for _, v := range x {
		ss += v * v
	}
	r := 1 / math.Sqrt(ss+1e-6)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * r * scale
	}
	return out, r
}

// deltaToken is one token's operands for one value head.
type deltaToken struct {
	q, k, v []float64 // q̂, k̂ (normalised), v
	a, beta float64   // exp(g), beta
}

func (s DeltaShape) token(qkv, g, beta []float64, t, h int) deltaToken {
	row := qkv[t*s.width() : (t+1)*s.width()]
	kh := h / (s.NHeadV / s.NHeadK)
	q, _ := l2Scaled(row[kh*s.DimK:(kh+1)*s.DimK], 1/math.Sqrt(float64(s.DimK)))
	k, _ := l2Scaled(row[(s.NHeadK+kh)*s.DimK:(s.NHeadK+kh+1)*s.DimK], 1)
	v := row[2*s.NHeadK*s.DimK+h*s.DimV : 2*s.NHeadK*s.DimK+(h+1)*s.DimV]
	return deltaToken{q: q, k: k, v: v, a: math.Exp(g[t*s.NHeadV+h]), beta: beta[t*s.NHeadV+h]}
}

// step applies one token to S (dimK × dimV) in place and returns δ (the
// written values β(v − k̂ᵀS')) and out = q̂ᵀS.
func (d deltaToken) step(S []float64, dimK, dimV int) (delta, out []float64) {
	for i := range S {
		S[i] *= d.a
	}
	delta = make([]float64, dimV)
	for j := range dimV {
		pred := 0.0
		for i := range dimK {
			pred += d.k[i] * S[i*dimV+j]
		}
		delta[j] = d.beta * (d.v[j] - pred)
	}
	out = make([]float64, dimV)
	for i := range dimK {
		for j := range dimV {
			S[i*dimV+j] += d.k[i] * delta[j]
			out[j] += d.q[i] * S[i*dimV+j]
		}
	}
	return delta, out
}

// initialState returns a run's starting state for head h.
func (s DeltaShape) initialState(state []float64, r LinearRun, h int) []float64 {
	S := make([]float64, s.DimK*s.DimV)
	if r.Init >= 0 {
		copy(S, state[(r.Init*s.NHeadV+h)*s.DimK*s.DimV:])
	}
	return S
}

// RefGatedDeltaRule returns out (nTok × nHeadV × dimV) by the token-by-token
// recurrence and writes each run's final states into state.
func RefGatedDeltaRule(qkv, g, beta, state []float64, runs []LinearRun, nTok int, s DeltaShape) []float64 {
	out := make([]float64, nTok*s.NHeadV*s.DimV)
	hs := s.DimK * s.DimV
	finals := map[int][]float64{}
	for _, r := range runs {
		fin := make([]float64, s.NHeadV*hs)
		for h := range s.NHeadV {
			S := s.initialState(state, r, h)
			for i := range r.Count {
				t := r.First + i
				_, o := s.token(qkv, g, beta, t, h).step(S, s.DimK, s.DimV)
				copy(out[(t*s.NHeadV+h)*s.DimV:], o)
			}
			copy(fin[h*hs:], S)
		}
		if r.Final >= 0 {
			finals[r.Final] = fin
		}
	}
	for slot, fin := range finals {
		copy(state[slot*s.NHeadV*hs:], fin)
	}
	return out
}

// l2Backward returns dx for y = x·r·scale, r = 1/sqrt(Σx² + 1e-6).
func l2Backward(x, dy []float64, scale float64) []float64 {
	_, r := l2Scaled(x, 1)
	dot := 0.0
	for i := range x {
		dot += x[i] * dy[i]
	}
	dx := make([]float64, len(x))
	for i := range x {
		dx[i] = scale * (r*dy[i] - x[i]*r*r*r*dot)
	}
	return dx
}

// RefGatedDeltaRuleBackward returns dqkv, dg and dbeta and adds the
// initial states' gradients into dState (read at final slots first). It
// walks each run backwards over the states the forward recurrence went
// through (all kept: this is a reference).
func RefGatedDeltaRuleBackward(dState, dout, qkv, g, beta, state []float64, runs []LinearRun, nTok int, s DeltaShape) (dqkv, dg, dbeta []float64) {
	W, hs := s.width(), s.DimK*s.DimV
	dqkv = make([]float64, nTok*W)
	dg = make([]float64, nTok*s.NHeadV)
	dbeta = make([]float64, nTok*s.NHeadV)
	dInit := make([]float64, len(dState))
	// dq̂ and dk̂ per token and key head, summed over value heads.
	dqh := make([]float64, nTok*s.NHeadK*s.DimK)
	dkh := make([]float64, nTok*s.NHeadK*s.DimK)
	for _, r := range runs {
		for h := range s.NHeadV {
			kh := h / (s.NHeadV / s.NHeadK)
			// before[i] is the state before token i; deltas[i] its δ.
			S := s.initialState(state, r, h)
			before := make([][]float64, r.Count)
			deltas := make([][]float64, r.Count)
			toks := make([]deltaToken, r.Count)
			for i := range r.Count {
				before[i] = append([]float64(nil), S...)
				toks[i] = s.token(qkv, g, beta, r.First+i, h)
				deltas[i], _ = toks[i].step(S, s.DimK, s.DimV)
			}
			dS := make([]float64, hs)
			if r.Final >= 0 {
				copy(dS, dState[(r.Final*s.NHeadV+h)*hs:(r.Final*s.NHeadV+h+1)*hs])
			}
			for i := r.Count - 1; i >= 0; i-- {
				t, d, delta := r.First+i, toks[i], deltas[i]
				do := dout[(t*s.NHeadV+h)*s.DimV : (t*s.NHeadV+h+1)*s.DimV]
				// S' = a·S_{t−1}; S_t = S' + k̂δᵀ; out = S_tᵀq̂.
				sp := make([]float64, hs)
				for e := range sp {
					sp[e] = d.a * before[i][e]
				}
				dq, dk := dqh[(t*s.NHeadK+kh)*s.DimK:], dkh[(t*s.NHeadK+kh)*s.DimK:]
				ddelta := make([]float64, s.DimV)
				for a := range s.DimK {
					for j := range s.DimV {
						st := sp[a*s.DimV+j] + d.k[a]*delta[j]
						dq[a] += st * do[j]
						dS[a*s.DimV+j] += d.q[a] * do[j]
						dk[a] += dS[a*s.DimV+j] * delta[j]
						ddelta[j] += d.k[a] * dS[a*s.DimV+j]
					}
				}
				// δ = β(v − k̂ᵀS').
				db := 0.0
				dpred := make([]float64, s.DimV)
				for j := range s.DimV {
					pred := 0.0
					for a := range s.DimK {
						pred += d.k[a] * sp[a*s.DimV+j]
					}
					db += ddelta[j] * (d.v[j] - pred)
					dqkv[t*W+2*s.NHeadK*s.DimK+h*s.DimV+j] = d.beta * ddelta[j]
					dpred[j] = -d.beta * ddelta[j]
				}
				dbeta[t*s.NHeadV+h] = db
				dgs := 0.0
				for a := range s.DimK {
					for j := range s.DimV {
						dk[a] += sp[a*s.DimV+j] * dpred[j]
						dsp := dS[a*s.DimV+j] + d.k[a]*dpred[j]
						dgs += dsp * sp[a*s.DimV+j]
						dS[a*s.DimV+j] = d.a * dsp
					}
				}
				dg[t*s.NHeadV+h] = dgs
			}
			if r.Init >= 0 {
				for e := range dS {
					dInit[(r.Init*s.NHeadV+h)*hs+e] += dS[e]
				}
			}
		}
	}
	for t := range nTok {
		row := qkv[t*W : (t+1)*W]
		for kh := range s.NHeadK {
			qo, ko := kh*s.DimK, (s.NHeadK+kh)*s.DimK
			copy(dqkv[t*W+qo:], l2Backward(row[qo:qo+s.DimK], dqh[(t*s.NHeadK+kh)*s.DimK:(t*s.NHeadK+kh+1)*s.DimK], 1/math.Sqrt(float64(s.DimK))))
			copy(dqkv[t*W+ko:], l2Backward(row[ko:ko+s.DimK], dkh[(t*s.NHeadK+kh)*s.DimK:(t*s.NHeadK+kh+1)*s.DimK], 1))
		}
	}
	for i := range dInit {
		dState[i] += dInit[i]
	}
	return dqkv, dg, dbeta
}

func refSoftplus(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

// RefDeltaGates returns g and beta.
func RefDeltaGates(a, b, aLog, dtBias []float64, rows, heads int) (g, beta []float64) {
	g, beta = make([]float64, rows*heads), make([]float64, rows*heads)
	for r := range rows {
		for h := range heads {
			i := r*heads + h
			g[i] = -math.Exp(aLog[h]) * refSoftplus(a[i]+dtBias[h])
			beta[i] = 1 / (1 + math.Exp(-b[i]))
		}
	}
	return g, beta
}

// RefDeltaGatesBackward returns da and db.
func RefDeltaGatesBackward(dg, dbeta, a, b, aLog, dtBias []float64, rows, heads int) (da, db []float64) {
	da, db = make([]float64, rows*heads), make([]float64, rows*heads)
	for r := range rows {
		for h := range heads {
			i := r*heads + h
			x := a[i] + dtBias[h]
			sp := 1.0 // softplus' above the threshold, as torch
			if x <= 20 {
				sp = 1 / (1 + math.Exp(-x))
			}
			da[i] = -dg[i] * math.Exp(aLog[h]) * sp
			s := 1 / (1 + math.Exp(-b[i]))
			db[i] = dbeta[i] * s * (1 - s)
		}
	}
	return da, db
}

// RefGatedRMSNorm returns out and the per-row 1/rms.
func RefGatedRMSNorm(x, z, w []float64, rows, dim int, eps float64) (out, rstd []float64) {
	out, rstd = make([]float64, rows*dim), make([]float64, rows)
	for r := range rows {
		ss := 0.0
		for i := range dim {
			ss += x[r*dim+i] * x[r*dim+i]
		}
		rstd[r] = 1 / math.Sqrt(ss/float64(dim)+eps)
		for i := range dim {
			out[r*dim+i] = w[i] * x[r*dim+i] * rstd[r] * refSilu(z[r*dim+i])
		}
	}
	return out, rstd
}

// RefGatedRMSNormBackward returns dx and dz with the forward's 1/rms.
func RefGatedRMSNormBackward(dy, x, z, w, rstd []float64, rows, dim int) (dx, dz []float64) {
	dx, dz = make([]float64, rows*dim), make([]float64, rows*dim)
	for r := range rows {
		rs, dot := rstd[r], 0.0
		dn := make([]float64, dim)
		for i := range dim {
			j := r*dim + i
			dn[i] = dy[j] * w[i] * refSilu(z[j])
			dz[j] = dy[j] * w[i] * x[j] * rs * refSiluGrad(z[j])
			dot += dn[i] * x[j]
		}
		for i := range dim {
			j := r*dim + i
			dx[j] = rs*dn[i] - x[j]*rs*rs*rs*dot/float64(dim)
		}
	}
	return dx, dz
}
