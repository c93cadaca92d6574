package gepa

import "sort"

// Fronts returns, for each validation instance, the candidates that reach
// the best score any candidate has on it (ties all belong), in id order.
// A candidate on at least one front is better than or equal to every other
// candidate somewhere: the pool's Pareto set, instance by instance.
func Fronts(pool []Candidate) [][]int {
	if len(pool) == 0 {
		return nil
	}
	n := len(pool[0].ValScores)
	fronts := make([][]int, n)
	for i := range n {
		best := pool[0].ValScores[i]
		for c := range pool {
			best = max(best, pool[c].ValScores[i])
		}
		for c := range pool {
			if pool[c].ValScores[i] == best {
				fronts[i] = append(fronts[i], c)
			}
		}
	}
	return fronts
}

// NonDominated returns the candidates that parent selection draws from,
// each with the number of fronts it sits on (its weight), in id order.
//
// As GEPA's remove_dominated_programs: of the candidates on any front,
// taken in order of rising mean validation score (then id), one is
// dropped when every front it sits on holds another candidate still kept;
// this repeats until none can be dropped. What stays covers every front,
// and a front's candidate that others always tie is not drawn twice as
// often for it. The weights count the fronts after the drops.
func NonDominated(pool []Candidate, fronts [][]int) (ids []int, weights []int) {
	onFront := map[int]bool{}
	for _, f := range fronts {
		for _, c := range f {
			onFront[c] = true
		}
	}
	order := make([]int, 0, len(onFront))
	for c := range onFront {
		order = append(order, c)
	}
	sort.Slice(order, func(a, b int) bool {
		ma, mb := pool[order[a]].Mean(), pool[order[b]].Mean()
		if ma != mb {
			return ma < mb
		}
		return order[a] < order[b]
	})
	dropped := map[int]bool{}
	covered := func(y int) bool {
		for _, f := range fronts {
			if !contains(f, y) {
				continue
			}
			other := false
			for _, c := range f {
				if c != y && !dropped[c] {
					other = true
					break
				}
			}
			if !other {
				return false
			}
		}
		return true
	}
	for changed := true; changed; {
		changed = false
		for _, y := range order {
			if !dropped[y] && covered(y) {
				dropped[y] = true
				changed = true
				break
			}
		}
	}
	for c := range pool {
		if !onFront[c] || dropped[c] {
			continue
		}
		w := 0
		for _, f := range fronts {
			if contains(f, c) {
				w++
			}
		}
		ids = append(ids, c)
		weights = append(weights, w)
	}
	return ids, weights
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// weightedPick draws ids[i] with probability weights[i]/Σweights using
// one draw of r in [0, Σweights).
func weightedPick(ids, weights []int, r int) int {
	for i, w := range weights {
		if r < w {
			return ids[i]
		}
		r -= w
	}
	return ids[len(ids)-1]
}
