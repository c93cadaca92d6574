package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// Sigmoid routing (GLM-4.5, DeepSeek-V3), per token in float32 in the
// order moe.cu's moe_route_sigmoid_f32 uses, so both choose the same
// experts.

func sigmoidRouteCheck(op string, n, nExperts, topK int, r kernels.SigmoidRouting) {
	positive(op, n, nExperts, topK)
	if topK > nExperts {
		panic(fmt.Sprintf("cpu.%s: topK %d > nExperts %d", op, topK, nExperts))
	}
	if err := r.Check(nExperts, topK); err != nil {
		panic(fmt.Sprintf("cpu.%s: %v", op, err))
	}
}

func sigmoid32(v float32) float32 { return 1 / (1 + float32(math.Exp(float64(-v)))) }

func (be *Backend) MoERouteSigmoid(weights, experts, logits, bias kernels.Buffer, n, nExperts, topK int, r kernels.SigmoidRouting, replay bool) {
	const op = "MoERouteSigmoid"
	sigmoidRouteCheck(op, n, nExperts, topK, r)
	ws := f32(op, "weights", weights, n*topK)
	es := ints(op, "experts", experts, n*topK)
	ls := floats(op, "logits", logits, n*nExperts)
	var bs []float32
	if bias != nil {
		bs = floats(op, "bias", bias, nExperts)
	}
	if replay {
		index(op, "experts", es, nExperts)
	}
	be.parallel(n, nExperts*topK, func(lo, hi int) {
		s := make([]float32, nExperts)
		c := make([]float32, nExperts)
		for t := lo; t < hi; t++ {
			for i, v := range ls[t*nExperts : (t+1)*nExperts] {
				s[i] = sigmoid32(v)
				c[i] = s[i]
				if bs != nil {
					c[i] += bs[i]
				}
			}
			e, w := es[t*topK:(t+1)*topK], ws[t*topK:(t+1)*topK]
			if !replay {
				limitGroups(c, r.Groups, r.TopKGroups)
				topKIndices(e, c)
			}
			var sum float32
			for j := range e {
				w[j] = s[e[j]]
				sum += w[j]
			}
			for j := range w {
				if r.NormTopK {
					w[j] /= sum + 1e-20
				}
				w[j] *= r.Scale
			}
		}
	})
}

// limitGroups sets to 0 the choice scores c outside the topKGroups
// groups whose two largest scores sum highest (ties to the lower group),
// as transformers masks them.
func limitGroups(c []float32, groups, topKGroups int) {
	if topKGroups >= groups {
		return
	}
	per := len(c) / groups
	score := make([]float32, groups)
	for g := range groups {
		score[g] = topTwoSum(c[g*per : (g+1)*per])
	}
	var chosen uint64
	for range topKGroups {
		best := -1
		for g, v := range score {
			if chosen&(1<<g) == 0 && (best < 0 || v > score[best]) {
				best = g
			}
		}
		chosen |= 1 << best
	}
	for g := range groups {
		if chosen&(1<<g) == 0 {
			clear(c[g*per : (g+1)*per])
		}
	}
}

// topTwoSum is the sum of the two largest values of c (len ≥ 2): the
// largest, lower index first among equals, plus the largest of the rest.
func topTwoSum(c []float32) float32 {
	first := 0
	for i, v := range c {
		if v > c[first] {
			first = i
		}
	}
	second := -1
	for i, v := range c {
		if i != first && (second < 0 || v > c[second]) {
			second = i
		}
	}
	return c[first] + c[second]
}

func (be *Backend) MoERouteSigmoidBackward(dlogits, dweights, logits, experts kernels.Buffer, n, nExperts, topK int, r kernels.SigmoidRouting) {
	const op = "MoERouteSigmoidBackward"
	sigmoidRouteCheck(op, n, nExperts, topK, r)
	dl := f32(op, "dlogits", dlogits, n*nExperts)
	dw := floats(op, "dweights", dweights, n*topK)
	ls := floats(op, "logits", logits, n*nExperts)
	es := ints(op, "experts", experts, n*topK)
	index(op, "experts", es, nExperts)
	be.parallel(n, nExperts*topK, func(lo, hi int) {
		s := make([]float64, topK)
		for t := lo; t < hi; t++ {
			row, e, g := dl[t*nExperts:(t+1)*nExperts], es[t*topK:(t+1)*topK], dw[t*topK:(t+1)*topK]
			clear(row)
			// w_j = Scale·s_j (/ S, S = Σ_k s_k): ∂L/∂s_j = Scale·dw_j, or
			// Scale·(dw_j/S − Σ_k dw_k·s_k/S²); then ∂s/∂l = s·(1 − s).
			var sum, dws float64
			for j, ej := range e {
				s[j] = float64(sigmoid32(ls[t*nExperts+int(ej)]))
				sum += s[j]
				dws += float64(g[j]) * s[j]
			}
			sum += 1e-20
			for j, ej := range e {
				ds := float64(g[j])
				if r.NormTopK {
					ds = ds/sum - dws/(sum*sum)
				}
				row[ej] = float32(float64(r.Scale) * ds * s[j] * (1 - s[j]))
			}
		}
	})
}
