package lab

import "math/rand/v2"

// RNG is the random source of the synthetic datasets. It draws from PCG,
// whose output for a seed is fixed, and does its own range reduction, so a
// dataset generated from a seed stays the same across Go releases (the
// math/rand/v2 helpers promise no such thing).
type RNG struct{ src *rand.PCG }

// NewRNG seeds a stream; different streams of one seed are independent,
// which keeps the train and eval splits apart.
func NewRNG(seed int, stream uint64) *RNG {
	return &RNG{rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15^stream)}
}

// Intn returns a uniform integer in [0, n) by rejection sampling; n > 0.
func (r *RNG) Intn(n int) int {
	bound := uint64(n)
	limit := ^uint64(0) - ^uint64(0)%bound
	for {
		if v := r.src.Uint64(); v < limit {
			return int(v % bound)
		}
	}
}

// Between returns a uniform integer in [lo, hi], like Python's randint.
func (r *RNG) Between(lo, hi int) int { return lo + r.Intn(hi-lo+1) }

// Shuffle permutes n items with Fisher-Yates.
func (r *RNG) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.Intn(i+1))
	}
}

// Pick returns a random element of xs.
func Pick[T any](r *RNG, xs []T) T { return xs[r.Intn(len(xs))] }

// Rand is what a builtin's generator draws with: grpo's RNG, or PyRandom
// where a Lab taskset's stream is reproduced draw for draw.
type Rand interface {
	Intn(n int) int
	Between(lo, hi int) int
	Shuffle(n int, swap func(i, j int))
}
