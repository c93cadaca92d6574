package kerneltest

import (
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// RefMoERouteSigmoid is kernels.MoEOps.MoERouteSigmoid in float64, written
// from its doc comment: it returns each token's experts (replay's when
// not nil) and weights. bias nil means no correction bias.
func RefMoERouteSigmoid(logits, bias []float64, replay []int32, n, nExperts, topK int, r kernels.SigmoidRouting) (experts []int32, weights []float64) {
	experts = make([]int32, n*topK)
	weights = make([]float64, n*topK)
	per := nExperts / r.Groups
	for t := range n {
		s := make([]float64, nExperts)
		c := make([]float64, nExperts)
		for i := range nExperts {
			s[i] = 1 / (1 + math.Exp(-logits[t*nExperts+i]))
			c[i] = s[i]
			if bias != nil {
				c[i] += bias[i]
			}
		}
		e := experts[t*topK : (t+1)*topK]
		if replay != nil {
			copy(e, replay[t*topK:(t+1)*topK])
		} else {
			// Group score: sort each group's scores, add the top two.
			groupScore := make([]float64, r.Groups)
			for g := range r.Groups {
				top := append([]float64(nil), c[g*per:(g+1)*per]...)
				sortDesc(top)
				groupScore[g] = top[0]
				if per > 1 {
					groupScore[g] += top[1]
				}
			}
			keep := make([]bool, r.Groups)
			for _, g := range argTopK(groupScore, r.TopKGroups) {
				keep[g] = true
			}
			masked := make([]float64, nExperts)
			for i := range nExperts {
				if keep[i/per] {
					masked[i] = c[i]
				}
			}
			for j, i := range argTopK(masked, topK) {
				e[j] = int32(i)
			}
		}
		sum := 0.0
		for _, ej := range e {
			sum += s[ej]
		}
		for j, ej := range e {
			w := s[ej]
			if r.NormTopK {
				w /= sum + 1e-20
			}
			weights[t*topK+j] = w * float64(r.Scale)
		}
	}
	return experts, weights
}

// argTopK returns the indices of the k largest values, largest first, the
// lower index first among equals.
func argTopK(v []float64, k int) []int {
	used := make([]bool, len(v))
	out := make([]int, k)
	for j := range out {
		best := -1
		for i, x := range v {
			if !used[i] && (best < 0 || x > v[best]) {
				best = i
			}
		}
		used[best] = true
		out[j] = best
	}
	return out
}

func sortDesc(v []float64) {
	for i := range v {
		for j := i + 1; j < len(v); j++ {
			if v[j] > v[i] {
				v[i], v[j] = v[j], v[i]
			}
		}
	}
}

// RefMoERouteSigmoidBackward returns dlogits for fixed experts, each
// partial derivative written out: ∂w_j/∂s_i over every chosen i, then
// ∂s_i/∂l_i = s_i·(1 − s_i).
func RefMoERouteSigmoidBackward(dweights, logits []float64, experts []int32, n, nExperts, topK int, r kernels.SigmoidRouting) []float64 {
	dl := make([]float64, n*nExperts)
	for t := range n {
		e := experts[t*topK : (t+1)*topK]
		s := make([]float64, topK)
		sum := 0.0
		for j, ej := range e {
			s[j] = 1 / (1 + math.Exp(-logits[t*nExperts+int(ej)]))
			sum += s[j]
		}
		for i, ei := range e {
			ds := 0.0 // ∂L/∂s_i = Σ_j dw_j·∂w_j/∂s_i
			for j := range e {
				d := 0.0
				if !r.NormTopK {
					if i == j {
						d = 1
					}
				} else {
					d = -s[j] / (sum * sum)
					if i == j {
						d += 1 / sum
					}
				}
				ds += dweights[t*topK+j] * d * float64(r.Scale)
			}
			dl[t*nExperts+int(ei)] = ds * s[i] * (1 - s[i])
		}
	}
	return dl
}
