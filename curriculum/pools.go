package curriculum

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
)

// Pool is where an example is: drawn as usual (Normal) or set aside as
// too easy or too hard for the policy.
type Pool uint8

const (
	Normal Pool = iota
	Easy
	Hard
)

var poolNames = [...]string{"normal", "easy", "hard"}

func (p Pool) String() string { return poolNames[p] }

// Pools is a run's difficulty state: each environment's set-aside
// examples, and this step's counts for the metrics.
type Pools struct {
	cfg    Config
	sizes  []int          // each environment's train split
	pooled []map[int]Pool // env → example index → Easy or Hard
	// This step's examples by the pool their group put them in, and
	// rollouts dropped by online difficulty filtering by why (prime-rl's
	// num_examples_per_step and num_rollouts_per_step).
	examples, rollouts [3]int
}

// New returns empty pools for environments whose train splits have the
// given sizes.
func New(cfg Config, sizes []int) *Pools {
	p := &Pools{cfg: cfg, sizes: slices.Clone(sizes), pooled: make([]map[int]Pool, len(sizes))}
	for e := range p.pooled {
		p.pooled[e] = map[int]Pool{}
	}
	return p
}

// Drawable reports whether example i of environment e may be drawn.
func (p *Pools) Drawable(e, i int) bool { return p.pooled[e][i] == Normal }

// DrawableCount reports how many of environment e's examples may be drawn.
func (p *Pools) DrawableCount(e int) int { return p.sizes[e] - len(p.pooled[e]) }

// Observe files the rewards of one group, played on example i of
// environment e: the example moves to a pool when its mean reward
// crosses a threshold, and train says whether the group is trained on —
// false when online difficulty filtering drops it for a mean of exactly
// 0 or 1, where every advantage is zero.
func (p *Pools) Observe(e, i int, rewards []float32) (train bool) {
	mean := 0.0
	for _, r := range rewards {
		mean += float64(r)
	}
	mean /= float64(len(rewards))
	pool := Normal
	switch c := p.cfg; {
	case c.EasyThreshold != nil && mean >= *c.EasyThreshold:
		pool = Easy
	case c.HardThreshold != nil && mean <= *c.HardThreshold:
		pool = Hard
	}
	if pool != Normal {
		p.pooled[e][i] = pool
	}
	p.examples[pool]++
	if p.cfg.OnlineDifficultyFiltering {
		switch mean {
		case 0:
			p.rollouts[Hard] += len(rewards)
			return false
		case 1:
			p.rollouts[Easy] += len(rewards)
			return false
		}
	}
	p.rollouts[Normal] += len(rewards)
	return true
}

// Metrics returns this step's numbers under prime-rl's names — the share
// of the step's examples set aside as easy or hard
// (evicted_examples/…), of its rollouts dropped by online difficulty
// filtering (filtered_rollouts/…), and of every example now in each pool
// (pool/…) — and starts the next step's counts.
func (p *Pools) Metrics() map[string]float64 {
	m := map[string]float64{}
	ex, ro := sum(p.examples), sum(p.rollouts)
	for _, pool := range []Pool{Easy, Hard} {
		if ex > 0 && p.cfg.Pools() {
			m["evicted_examples/"+pool.String()] = float64(p.examples[pool]) / float64(ex)
		}
		if ro > 0 && p.cfg.OnlineDifficultyFiltering {
			m["filtered_rollouts/"+pool.String()] = float64(p.rollouts[pool]) / float64(ro)
		}
	}
	if p.cfg.Pools() {
		var in [3]int
		total := 0
		for e, pooled := range p.pooled {
			total += p.sizes[e]
			for _, pool := range pooled {
				in[pool]++
			}
		}
		in[Normal] = total - in[Easy] - in[Hard]
		for pool, n := range in {
			if total > 0 {
				m["pool/"+Pool(pool).String()] = float64(n) / float64(total)
			}
		}
	}
	p.examples, p.rollouts = [3]int{}, [3]int{}
	return m
}

func sum(a [3]int) int { return a[0] + a[1] + a[2] }

// State is the pools as a checkpoint keeps them: per environment, the
// sorted indices of its easy and of its hard examples.
type State struct {
	Easy [][]int `json:"easy"`
	Hard [][]int `json:"hard"`
}

// State returns the pools' checkpoint state.
func (p *Pools) State() *State {
	st := &State{Easy: make([][]int, len(p.pooled)), Hard: make([][]int, len(p.pooled))}
	for e, pooled := range p.pooled {
		st.Easy[e], st.Hard[e] = []int{}, []int{}
		for i, pool := range pooled {
			if pool == Easy {
				st.Easy[e] = append(st.Easy[e], i)
			} else {
				st.Hard[e] = append(st.Hard[e], i)
			}
		}
		slices.Sort(st.Easy[e])
		slices.Sort(st.Hard[e])
	}
	return st
}

// Restore puts the pools of the checkpoint of step back, then returns
// [buffer] easy_fraction of the easy pool and hard_fraction of the hard
// one to the drawn examples, chosen with [buffer] seed or else runSeed
// (so a resume is repeatable). A state that does not fit these
// environments is an error naming what differs.
func (p *Pools) Restore(st *State, runSeed uint64, step int) error {
	if len(st.Easy) != len(p.pooled) || len(st.Hard) != len(p.pooled) {
		return fmt.Errorf("difficulty pools of %d/%d environments, but the run has %d; resume with the [[env]] blocks it was trained with", len(st.Easy), len(st.Hard), len(p.pooled))
	}
	if p.cfg.Seed != nil {
		runSeed = uint64(*p.cfg.Seed)
	}
	rng := rand.New(rand.NewPCG(runSeed, uint64(step)))
	for e := range p.pooled {
		p.pooled[e] = map[int]Pool{}
		for _, set := range []struct {
			pool     Pool
			ids      []int
			fraction float64
		}{{Easy, st.Easy[e], p.cfg.EasyFraction}, {Hard, st.Hard[e], p.cfg.HardFraction}} {
			for _, i := range set.ids {
				if i < 0 || i >= p.sizes[e] {
					return fmt.Errorf("env %d: %s pool holds example %d of a train split of %d; the split changed since the checkpoint", e, set.pool, i, p.sizes[e])
				}
				if _, dup := p.pooled[e][i]; dup {
					return fmt.Errorf("env %d: example %d is in the pools twice", e, i)
				}
				p.pooled[e][i] = set.pool
			}
			// As prime-rl: Python's round, half to even.
			back := int(math.RoundToEven(float64(len(set.ids)) * set.fraction))
			for _, k := range rng.Perm(len(set.ids))[:back] {
				delete(p.pooled[e], set.ids[k])
			}
		}
	}
	return nil
}

// Clone returns an independent copy, so a step that fails can be undone.
func (p *Pools) Clone() *Pools {
	q := *p
	q.sizes = slices.Clone(p.sizes)
	q.pooled = make([]map[int]Pool, len(p.pooled))
	for e, m := range p.pooled {
		q.pooled[e] = maps.Clone(m)
	}
	return &q
}
