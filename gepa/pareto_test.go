package gepa

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

func pool(scores ...[]float64) []Candidate {
	p := make([]Candidate, len(scores))
	for i, s := range scores {
		p[i] = Candidate{ID: i, Text: string(rune('A' + i)), ValScores: s}
	}
	return p
}

// TestFrontsAndNonDominated checks a pool worked by hand:
//
//	      v0  v1  v2  v3   mean
//	c0     1   0   0  .5   .375
//	c1     1   1   0  .5   .625
//	c2     0   0   1  .5   .375
//	c3     0   0   0  .5   .125
//
// Fronts: v0 {0,1}, v1 {1}, v2 {2}, v3 {0,1,2,3}. In rising mean (then
// id) order c3, c0, c2, c1: c3's only front v3 holds others, dropped;
// c0's fronts v0 (c1) and v3 (c1, c2) hold others, dropped; c2 alone on
// v2 and c1 alone on v1 stay. Weights: c1 sits on v0, v1, v3 = 3; c2 on
// v2, v3 = 2.
func TestFrontsAndNonDominated(t *testing.T) {
	p := pool([]float64{1, 0, 0, .5}, []float64{1, 1, 0, .5}, []float64{0, 0, 1, .5}, []float64{0, 0, 0, .5})
	fronts := Fronts(p)
	if want := [][]int{{0, 1}, {1}, {2}, {0, 1, 2, 3}}; !reflect.DeepEqual(fronts, want) {
		t.Fatalf("fronts %v, want %v", fronts, want)
	}
	ids, w := NonDominated(p, fronts)
	if !reflect.DeepEqual(ids, []int{1, 2}) || !reflect.DeepEqual(w, []int{3, 2}) {
		t.Fatalf("non-dominated %v weights %v, want [1 2] [3 2]", ids, w)
	}
	// A draw r in [0, 5): 0..2 pick c1, 3..4 pick c2.
	for r, want := range []int{1, 1, 1, 2, 2} {
		if got := weightedPick(ids, w, r); got != want {
			t.Errorf("weightedPick(r=%d) = %d, want %d", r, got, want)
		}
	}
}

// TestNonDominatedTies: two candidates equal everywhere are one point of
// the front: the lower-scored-first scan drops the first (c0, by id), so
// the pair is not drawn twice as often as a third candidate alone on its
// own front.
func TestNonDominatedTies(t *testing.T) {
	p := pool([]float64{1, 0}, []float64{1, 0}, []float64{0, 1})
	ids, w := NonDominated(p, Fronts(p))
	if !reflect.DeepEqual(ids, []int{1, 2}) || !reflect.DeepEqual(w, []int{1, 1}) {
		t.Fatalf("non-dominated %v weights %v, want [1 2] [1 1]", ids, w)
	}
	// A candidate best nowhere is never a parent.
	p = pool([]float64{.2, .2}, []float64{.9, .1}, []float64{.1, .9})
	if ids, _ := NonDominated(p, Fronts(p)); !reflect.DeepEqual(ids, []int{1, 2}) {
		t.Fatalf("non-dominated %v, want [1 2]", ids)
	}
}

// TestSelectionFrequencies: parents drawn by selectParent from the pool of
// TestFrontsAndNonDominated come out 3:2, within four standard deviations
// of 20000 draws, and never a dominated one.
func TestSelectionFrequencies(t *testing.T) {
	op := &optimizer{st: &state{Pool: pool([]float64{1, 0, 0, .5}, []float64{1, 1, 0, .5}, []float64{0, 0, 1, .5}, []float64{0, 0, 0, .5})}, rng: newRNGs(7)}
	const n = 20000
	count := map[int]int{}
	for range n {
		count[op.selectParent()]++
	}
	if count[0]+count[3] != 0 {
		t.Fatalf("dominated candidates drawn: %v", count)
	}
	p := 0.6
	sd := (p * (1 - p) / n)
	if f := float64(count[1]) / n; (f-p)*(f-p) > 16*sd {
		t.Errorf("c1 drawn %.4f of the time, want %.2f", f, p)
	}
}

// TestMinibatchesEpochs: 5 train examples in minibatches of 2: each epoch
// is a shuffle padded to 6 with the least shown index, so after three
// epochs (9 minibatches) every index was shown 3 or 4 times and each
// epoch's first five entries are a permutation.
func TestMinibatchesEpochs(t *testing.T) {
	m := newMinibatches(5, 2)
	rng := rand.New(rand.NewPCG(1, 2))
	var dealt []int
	for range 9 {
		b := m.next(rng)
		if len(b) != 2 {
			t.Fatalf("minibatch %v: want 2 indices", b)
		}
		dealt = append(dealt, b...)
	}
	for e := range 3 {
		seen := map[int]bool{}
		for _, i := range dealt[6*e : 6*e+5] {
			seen[i] = true
		}
		if len(seen) != 5 {
			t.Errorf("epoch %d: %v is not a permutation of 0..4", e, dealt[6*e:6*e+5])
		}
	}
	for i, n := range m.Shown {
		if n < 3 || n > 4 {
			t.Errorf("index %d shown %d times in 3 epochs", i, n)
		}
	}
	if m.Epoch != 3 {
		t.Errorf("epoch %d, want 3", m.Epoch)
	}
}

// TestParseInstruction: GEPA's reading of a teacher's reply.
func TestParseInstruction(t *testing.T) {
	for _, c := range []struct{ reply, want string }{
		{"Sure.\n```\nBe brief.\n```\nHope it helps.", "Be brief."},
		{"```text\nLine one.\nLine two.\n```", "Line one.\nLine two."},
		{"a ```x``` b ```y``` c", "x``` b ```y"},
		{"```markdown\nNever closed", "Never closed"},
		{"Just the instruction, no fences.  ", "Just the instruction, no fences."},
		{"Prefix ``` only one fence", "Prefix ``` only one fence"},
		{"Closing only.\n```", "Closing only."},
		{"```Use two steps. Then answer.\n```", "Use two steps. Then answer."},
	} {
		if got := ParseInstruction(c.reply); got != c.want {
			t.Errorf("ParseInstruction(%q) = %q, want %q", c.reply, got, c.want)
		}
	}
}
