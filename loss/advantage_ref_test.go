package loss

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// refAdvantages is the float64 reference of Advantages: r − mean(group),
// divided by (std + 1e-4) with std the unbiased standard deviation of the
// group (ScaleGroup) or of all rewards (ScaleBatch), undivided for
// ScaleNone. A set of one value has std 0.
func refAdvantages(rewards []float64, nGroups, groupSize int, scale AdvantageScale) []float64 {
	adv := make([]float64, nGroups*groupSize)
	batchStd := refUnbiasedStd(rewards[:nGroups*groupSize])
	for g := 0; g < nGroups; g++ {
		grp := rewards[g*groupSize : (g+1)*groupSize]
		mean := 0.0
		for _, r := range grp {
			mean += r
		}
		mean /= float64(groupSize)
		div := 1.0
		switch scale {
		case ScaleGroup:
			div = refUnbiasedStd(grp) + 1e-4
		case ScaleBatch:
			div = batchStd + 1e-4
		}
		for i, r := range grp {
			adv[g*groupSize+i] = (r - mean) / div
		}
	}
	return adv
}

// refUnbiasedStd is sqrt(Σ(x − mean)²/(n − 1)), and 0 for n ≤ 1.
func refUnbiasedStd(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	ss := 0.0
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return math.Sqrt(ss / float64(len(x)-1))
}

func TestRefAdvantagesByHand(t *testing.T) {
	near := func(what string, got, want []float64) {
		t.Helper()
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Errorf("%s[%d] = %.15g, want %.15g", what, i, got[i], want[i])
			}
		}
	}
	r := []float64{0, 1, 1, 1}
	s := math.Sqrt(0.5) + 1e-4 // unbiased std of (0, 1) is √(1/2), not 1/2
	near("group", refAdvantages(r, 2, 2, ScaleGroup), []float64{-0.5 / s, 0.5 / s, 0, 0})
	// Batch (0, 1, 1, 1): mean 3/4, Σ(r − mean)² = 3/4, unbiased var 1/4.
	near("batch", refAdvantages(r, 2, 2, ScaleBatch), []float64{-0.5 / 0.5001, 0.5 / 0.5001, 0, 0})
	near("none", refAdvantages(r, 2, 2, ScaleNone), []float64{-0.5, 0.5, 0, 0})
	for _, sc := range []AdvantageScale{ScaleGroup, ScaleBatch, ScaleNone} {
		near("groups of one", refAdvantages([]float64{3, 5}, 2, 1, sc), []float64{0, 0})
	}
}

// TestAdvantagesMatchReference: Advantages does the reference's float64
// arithmetic in the same order and rounds once, so it is the reference
// rounded to float32, bit for bit, and exactly 0 for every constant group
// or single reward. The shapes are groups of one (advantage 0, std 0 by
// definition), a single group, binary rewards with constant groups,
// fractional rewards, constant fractional groups (exactly 0 needs an
// exact mean, e.g. a float64 sum), a 64×16 batch, and random mixes of
// pass/fail, partial-credit and constant groups.
func TestAdvantagesMatchReference(t *testing.T) {
	type shape struct {
		name               string
		nGroups, groupSize int
		rewards            func(rng *rand.Rand, n int) []float32
	}
	uniform := func(rng *rand.Rand, n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32((2*rng.Float64()-1)*0.5) + 0.5
		}
		return v
	}
	binary := func(rng *rand.Rand, n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			if rng.IntN(2) == 1 {
				v[i] = 1
			}
		}
		for i := 0; i < n/2; i++ { // first half: constant groups of 1
			v[i] = 1
		}
		return v
	}
	shapes := []shape{
		{"one", 1, 1, uniform},
		{"groups-of-one", 5, 1, uniform},
		{"one-group", 1, 7, uniform},
		{"binary", 4, 8, binary},
		{"fractional", 6, 5, uniform},
		{"constant-fractional", 3, 5, func(_ *rand.Rand, n int) []float32 {
			v := make([]float32, n) // groups of 0.7, 0.3 and 0.1: r − mean is 0 only if the mean is exact
			for i := range v {
				v[i] = []float32{0.7, 0.3, 0.1}[i/5]
			}
			return v
		}},
		{"batch", 64, 16, uniform},
	}
	for trial := range 40 {
		shapes = append(shapes, shape{fmt.Sprintf("mixed-%d", trial), 0, 0, nil})
	}
	mixed := rand.New(rand.NewPCG(10, 6))
	for i, s := range shapes {
		rng := rand.New(rand.NewPCG(uint64(2900+i), 0x9e3779b97f4a7c15))
		var rewards []float32
		if s.rewards != nil {
			rewards = s.rewards(rng, s.nGroups*s.groupSize)
		} else {
			s.nGroups, s.groupSize = 1+mixed.IntN(24), 1+mixed.IntN(16)
			rewards = mixedRewards(mixed, s.nGroups, s.groupSize)
		}
		r64 := make([]float64, len(rewards))
		for j, r := range rewards {
			r64[j] = float64(r)
		}
		for _, sc := range []AdvantageScale{ScaleGroup, ScaleBatch, ScaleNone} {
			name := fmt.Sprintf("%s (%d×%d), scale %d", s.name, s.nGroups, s.groupSize, sc)
			got, _, err := Advantages(rewards, s.groupSize, sc)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for j, w := range refAdvantages(r64, s.nGroups, s.groupSize, sc) {
				grp := rewards[j/s.groupSize*s.groupSize : (j/s.groupSize+1)*s.groupSize]
				constant := true
				for _, r := range grp {
					constant = constant && r == grp[0]
				}
				if constant && got[j] != 0 {
					t.Fatalf("%s: adv[%d] = %g, want exactly 0 (group %d is constant or a single reward)", name, j, got[j], j/s.groupSize)
				}
				if math.Float32bits(got[j]) != math.Float32bits(float32(w)) {
					t.Fatalf("%s: adv[%d] = %.9g, want the reference %.17g rounded once", name, j, got[j], w)
				}
			}
		}
	}
}

// mixedRewards draws each group as pass/fail, partial credit or constant
// (no signal, advantage exactly 0).
func mixedRewards(rng *rand.Rand, groups, size int) []float32 {
	rewards := make([]float32, groups*size)
	for g := range groups {
		kind := rng.IntN(3)
		c := rng.Float32()
		for i := range size {
			r := &rewards[g*size+i]
			switch kind {
			case 0:
				*r = float32(rng.IntN(2))
			case 1:
				*r = rng.Float32()
			default:
				*r = c
			}
		}
	}
	return rewards
}
