package gepa

import (
	"math/rand/v2"
	"sort"
)

// minibatches deals the train set out in minibatches, as GEPA's
// EpochShuffledBatchSampler: each epoch is a fresh shuffle of every train
// index, padded (when the set does not divide into whole minibatches) with
// the indices drawn least often so far, so every minibatch is full and
// over the epochs every example is shown about equally often.
type minibatches struct {
	Size  int   `json:"size"`
	N     int   `json:"n"`
	Order []int `json:"order"` // this epoch's indices
	Pos   int   `json:"pos"`   // next unread position of Order
	Epoch int   `json:"epoch"`
	// Shown counts how often each index has been dealt.
	Shown []int `json:"shown"`
}

func newMinibatches(n, size int) *minibatches {
	return &minibatches{Size: size, N: n, Shown: make([]int, n)}
}

// next deals the next minibatch, starting an epoch (one shuffle by rng)
// when the current one is used up.
func (m *minibatches) next(rng *rand.Rand) []int {
	if m.Pos+m.Size > len(m.Order) {
		m.newEpoch(rng)
	}
	b := append([]int(nil), m.Order[m.Pos:m.Pos+m.Size]...)
	m.Pos += m.Size
	for _, i := range b {
		m.Shown[i]++
	}
	return b
}

func (m *minibatches) newEpoch(rng *rand.Rand) {
	order := rng.Perm(m.N)
	if pad := (m.Size - m.N%m.Size) % m.Size; pad > 0 {
		// Least shown first; equals in this epoch's shuffled order.
		rank := make([]int, m.N)
		for pos, i := range order {
			rank[i] = pos
		}
		by := append([]int(nil), order...)
		sort.SliceStable(by, func(a, b int) bool {
			if m.Shown[by[a]] != m.Shown[by[b]] {
				return m.Shown[by[a]] < m.Shown[by[b]]
			}
			return rank[by[a]] < rank[by[b]]
		})
		order = append(order, by[:pad]...)
	}
	m.Order, m.Pos = order, 0
	m.Epoch++
}
