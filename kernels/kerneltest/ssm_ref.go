package kerneltest

import "math"

// Plain-loop float64 references of kernels.SSMOps, written from the ops'
// doc comments (and checked against finite differences in
// ssm_ref_test.go).

// SSMShape names the sizes of an SSDScan call.
type SSMShape struct{ NHeads, HeadDim, NGroups, StateSize int }

func (s SSMShape) width() int { return s.NHeads*s.HeadDim + 2*s.NGroups*s.StateSize }
func (s SSMShape) hs() int    { return s.HeadDim * s.StateSize }

// ssmToken is one token's operands for one head.
type ssmToken struct {
	x, b, c   []float64
	dt, a, sp float64 // dt, exp(dt·A), softplus'(dtRaw + dtBias)
}

func (s SSMShape) token(xBC, dtRaw, aLog, dtBias []float64, t, h int) ssmToken {
	row := xBC[t*s.width() : (t+1)*s.width()]
	g := h / (s.NHeads / s.NGroups)
	bo := s.NHeads*s.HeadDim + g*s.StateSize
	co := s.NHeads*s.HeadDim + (s.NGroups+g)*s.StateSize
	z := dtRaw[t*s.NHeads+h] + dtBias[h]
	dt, sp := math.Log1p(math.Exp(z)), 1/(1+math.Exp(-z))
	if z > 20 {
		dt, sp = z, 1
	}
	return ssmToken{
		x: row[h*s.HeadDim : (h+1)*s.HeadDim], b: row[bo : bo+s.StateSize], c: row[co : co+s.StateSize],
		dt: dt, a: math.Exp(-dt * math.Exp(aLog[h])), sp: sp,
	}
}

// step applies the token to S (headDim × stateSize) in place.
func (k ssmToken) step(S []float64, n int) {
	for p, xp := range k.x {
		for j := range n {
			S[p*n+j] = k.a*S[p*n+j] + k.dt*xp*k.b[j]
		}
	}
}

// RefSSDScan returns y (nTok × nHeads × headDim; rows no run covers stay
// 0) by the recurrence and writes each run's final states into state.
func RefSSDScan(xBC, dtRaw, aLog, dtBias, d, state []float64, runs []LinearRun, nTok int, s SSMShape) []float64 {
	y := make([]float64, nTok*s.NHeads*s.HeadDim)
	hs := s.hs()
	finals := map[int][]float64{}
	for _, r := range runs {
		fin := make([]float64, s.NHeads*hs)
		for h := range s.NHeads {
			S := make([]float64, hs)
			if r.Init >= 0 {
				copy(S, state[(r.Init*s.NHeads+h)*hs:])
			}
			for t := r.First; t < r.First+r.Count; t++ {
				k := s.token(xBC, dtRaw, aLog, dtBias, t, h)
				k.step(S, s.StateSize)
				for p := range s.HeadDim {
					v := d[h] * k.x[p]
					for j := range s.StateSize {
						v += S[p*s.StateSize+j] * k.c[j]
					}
					y[(t*s.NHeads+h)*s.HeadDim+p] = v
				}
			}
			copy(fin[h*hs:], S)
		}
		if r.Final >= 0 {
			finals[r.Final] = fin
		}
	}
	for slot, fin := range finals {
		copy(state[slot*s.NHeads*hs:], fin)
	}
	return y
}

// RefSSDScanBackward returns dxBC and ddtRaw and adds the initial states'
// gradients into dState (read at final slots first): the recurrence
// walked backwards with the gradient G of each token's state, the states
// replayed forward first.
func RefSSDScanBackward(dState, dy, xBC, dtRaw, aLog, dtBias, d, state []float64, runs []LinearRun, nTok int, s SSMShape) (dxBC, ddtRaw []float64) {
	dxBC, ddtRaw = make([]float64, nTok*s.width()), make([]float64, nTok*s.NHeads)
	hs, n := s.hs(), s.StateSize
	dInit := make([]float64, len(dState))
	for _, r := range runs {
		for h := range s.NHeads {
			A := -math.Exp(aLog[h])
			states := make([][]float64, r.Count+1) // states[i]: before token i
			states[0] = make([]float64, hs)
			if r.Init >= 0 {
				copy(states[0], state[(r.Init*s.NHeads+h)*hs:])
			}
			for i := range r.Count {
				states[i+1] = append([]float64(nil), states[i]...)
				s.token(xBC, dtRaw, aLog, dtBias, r.First+i, h).step(states[i+1], n)
			}
			G := make([]float64, hs)
			if r.Final >= 0 {
				copy(G, dState[(r.Final*s.NHeads+h)*hs:(r.Final*s.NHeads+h+1)*hs])
			}
			for i := r.Count - 1; i >= 0; i-- {
				t := r.First + i
				k := s.token(xBC, dtRaw, aLog, dtBias, t, h)
				row := dxBC[t*s.width() : (t+1)*s.width()]
				g := h / (s.NHeads / s.NGroups)
				dB := row[s.NHeads*s.HeadDim+g*n:]
				dC := row[s.NHeads*s.HeadDim+(s.NGroups+g)*n:]
				dyt := dy[(t*s.NHeads+h)*s.HeadDim:]
				ddt := 0.0
				for p := range s.HeadDim {
					row[h*s.HeadDim+p] = d[h] * dyt[p]
					for j := range n {
						G[p*n+j] += dyt[p] * k.c[j]
						dC[j] += dyt[p] * states[i+1][p*n+j]
						row[h*s.HeadDim+p] += k.dt * G[p*n+j] * k.b[j]
						dB[j] += k.dt * G[p*n+j] * k.x[p]
						ddt += G[p*n+j] * (k.x[p]*k.b[j] + A*k.a*states[i][p*n+j])
					}
				}
				ddtRaw[t*s.NHeads+h] = ddt * k.sp
				for j := range G {
					G[j] *= k.a
				}
			}
			if r.Init >= 0 {
				for j, v := range G {
					dInit[(r.Init*s.NHeads+h)*hs+j] += v
				}
			}
		}
	}
	for i := range dInit {
		dState[i] += dInit[i]
	}
	return dxBC, ddtRaw
}
