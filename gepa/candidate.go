package gepa

// Candidate is one system prompt of the pool with its lineage and its
// score on every validation instance.
type Candidate struct {
	ID   int    `json:"id"`
	Text string `json:"text"`
	// Parents are the candidates it was made from: none for the seed, one
	// for a reflective mutation, two for a merge.
	Parents []int `json:"parents"`
	// Iteration is the iteration that accepted it (0: the seed).
	Iteration int `json:"iteration"`
	// Kind is "seed", "reflect" or "merge".
	Kind string `json:"kind"`
	// ValScores[i] is its score on validation instance i.
	ValScores []float64 `json:"val_scores"`
}

// Mean is the candidate's mean validation score.
func (c *Candidate) Mean() float64 {
	if len(c.ValScores) == 0 {
		return 0
	}
	s := 0.0
	for _, v := range c.ValScores {
		s += v
	}
	return s / float64(len(c.ValScores))
}

// bestCandidate is the candidate with the highest mean validation score,
// the earliest of equals (so a later prompt must do better to replace it).
func bestCandidate(pool []Candidate) int {
	best := 0
	for i := range pool {
		if pool[i].Mean() > pool[best].Mean() {
			best = i
		}
	}
	return best
}

// isAncestor says whether a is an ancestor of b in the pool's lineage.
func isAncestor(pool []Candidate, a, b int) bool {
	seen := map[int]bool{}
	stack := append([]int(nil), pool[b].Parents...)
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c == a {
			return true
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		stack = append(stack, pool[c].Parents...)
	}
	return false
}
