package kerneltest

import (
	"math"
	"sort"

	"github.com/grpo-dev/grpo/kernels"
)

// RefSample is the specification of kernels.SampleOps.Sample for one row,
// written plainly: float64 throughout, min-p as a probability ratio
// (p_i ≥ MinP·p_max, evaluated in log space as the spec states), top-k and
// top-p by a full stable sort on (weight desc, id asc), every sum taken
// left to right in the order the spec names. It returns the token and the
// raw log-prob before the op's float32 rounding, or (−1, NaN) for a row
// with NaN, +Inf or no finite logit.
func RefSample(row []float32, p kernels.SampleParams, u float64) (int32, float64) {
	mx := math.Inf(-1)
	for _, x := range row {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 1) {
			return -1, math.NaN()
		}
		mx = math.Max(mx, float64(x))
	}
	if math.IsInf(mx, -1) {
		return -1, math.NaN()
	}
	var z1 float64
	for _, x := range row {
		z1 += math.Exp(float64(x) - mx)
	}
	logp := func(t int) (int32, float64) { return int32(t), float64(row[t]) - mx - math.Log(z1) }
	if p.Temperature == 0 {
		best := 0
		for i, x := range row {
			if x > row[best] {
				best = i
			}
		}
		return logp(best)
	}
	type cand struct {
		id int
		w  float64
	}
	var cs []cand
	for i, x := range row {
		s := (float64(x) - mx) / p.Temperature
		if math.IsInf(s, -1) || p.MinP > 0 && s < math.Log(p.MinP) {
			continue
		}
		cs = append(cs, cand{i, math.Exp(s)})
	}
	kept := cs // id order
	if k := p.TopK; k > 0 && k < len(cs) || p.TopP < 1 {
		sorted := append([]cand(nil), cs...)
		sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].w > sorted[b].w })
		if k > 0 && k < len(sorted) {
			sorted = sorted[:k]
		}
		if p.TopP < 1 {
			var z, cum float64
			for _, c := range sorted {
				z += c.w
			}
			n := 0
			for n < len(sorted) {
				cum += sorted[n].w
				n++
				if cum >= p.TopP*z {
					break
				}
			}
			sorted = sorted[:n]
		}
		kept = sorted
	}
	var z float64
	for _, c := range kept {
		z += c.w
	}
	var cum float64
	for _, c := range kept {
		cum += c.w
		if cum > u*z {
			return logp(c.id)
		}
	}
	return logp(kept[len(kept)-1].id)
}
