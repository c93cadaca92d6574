package curriculum

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/grpo-dev/grpo/sampler"
)

// Schedule hands out training examples, as indices into each
// environment's train split: each step takes a fixed number of
// examples, split across the environments in proportion to their weights
// (largest remainder, ties drawn with the step's RNG), and each environment
// walks its train split in an order reshuffled every epoch. Cursors count
// the examples each environment has handed out; with the seed they are the
// whole state, saved in checkpoints.
type Schedule struct {
	seed    uint64
	weights []float64
	sizes   []int
	Cursors []int
}

// NewSchedule returns the schedule of environments with these weights and
// train splits of these sizes.
func NewSchedule(seed uint64, weights []float64, sizes []int) (*Schedule, error) {
	total := 0.0
	for i, w := range weights {
		if sizes[i] == 0 && w > 0 {
			return nil, fmt.Errorf("env %d has an empty train split", i)
		}
		total += w
	}
	if !(total > 0) {
		return nil, fmt.Errorf("env weights sum to %v; give at least one env a positive weight", total)
	}
	return &Schedule{seed: seed, weights: weights, sizes: sizes, Cursors: make([]int, len(weights))}, nil
}

// Counts splits n examples across envs for step.
func (s *Schedule) Counts(step, n int) []int {
	return s.countsSeeded(sampler.DeriveSeed(s.seed, 0x5c4ed, uint64(step)), n)
}

// RefillCounts splits the n examples of a step's refill round (round ≥ 1)
// across envs.
func (s *Schedule) RefillCounts(step, round, n int) []int {
	return s.countsSeeded(sampler.DeriveSeed(s.seed, 0x5c4ed, uint64(step), uint64(round)), n)
}

func (s *Schedule) countsSeeded(seed uint64, n int) []int {
	total := 0.0
	for _, w := range s.weights {
		total += w
	}
	counts := make([]int, len(s.weights))
	type rem struct {
		env  int
		frac float64
		tie  uint64
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	var rems []rem
	given := 0
	for i, w := range s.weights {
		exact := float64(n) * w / total
		counts[i] = int(math.Floor(exact))
		given += counts[i]
		rems = append(rems, rem{i, exact - float64(counts[i]), rng.Uint64()})
	}
	sort.Slice(rems, func(a, b int) bool {
		if rems[a].frac != rems[b].frac {
			return rems[a].frac > rems[b].frac
		}
		return rems[a].tie < rems[b].tie
	})
	for k := 0; given < n; k++ {
		counts[rems[k%len(rems)].env]++
		given++
	}
	return counts
}

// Next returns the indices of count examples of env e for one step and
// advances its cursor past them. Examples that drawable refuses (set
// aside in a difficulty pool) are passed over; nil draws every one; the
// caller makes sure that one is drawable.
func (s *Schedule) Next(e, count int, drawable func(e, i int) bool) []int {
	size := s.sizes[e]
	idx := make([]int, 0, count)
	epoch, ord := -1, []int(nil)
	for len(idx) < count {
		c := s.Cursors[e]
		if c/size != epoch {
			epoch = c / size
			ord = s.order(e, epoch)
		}
		i := ord[c%size]
		s.Cursors[e]++
		if drawable == nil || drawable(e, i) {
			idx = append(idx, i)
		}
	}
	return idx
}

// order is env e's permutation of its split for one epoch.
func (s *Schedule) order(e, epoch int) []int {
	rng := rand.New(rand.NewPCG(sampler.DeriveSeed(s.seed, 0xda7a, uint64(e), uint64(epoch)), 2))
	return rng.Perm(s.sizes[e])
}
