package env

import (
	"math/rand/v2"
	"strconv"
)

// rng is the random source of the synthetic datasets. It draws from PCG,
// whose output for a seed is fixed, and does its own range reduction, so a
// dataset generated from a seed stays the same across Go releases (the
// math/rand/v2 helpers promise no such thing).
type rng struct{ src *rand.PCG }

// newRNG seeds a stream; different streams of one seed are independent,
// which keeps the train and eval splits apart.
func newRNG(seed int, stream uint64) *rng {
	return &rng{rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15^stream)}
}

// intn returns a uniform integer in [0, n) by rejection sampling; n > 0.
func (r *rng) intn(n int) int {
	bound := uint64(n)
	limit := ^uint64(0) - ^uint64(0)%bound
	for {
		if v := r.src.Uint64(); v < limit {
			return int(v % bound)
		}
	}
}

// between returns a uniform integer in [lo, hi], like Python's randint.
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// shuffle permutes n items with Fisher-Yates.
func (r *rng) shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.intn(i+1))
	}
}

// pick returns a random element of xs.
func pick[T any](r *rng, xs []T) T { return xs[r.intn(len(xs))] }

func itoa(i int) string { return strconv.Itoa(i) }
