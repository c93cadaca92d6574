package sampler

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestStepAdmitsBetweenSteps drives the sampler as a continuous-batching
// scheduler does: sequences start at different steps, finished ones are
// released at once and their slots reused. Each sequence's tokens must be
// exactly those it gets alone through Run, because a sequence's draws come
// from its own seed whatever shares the batch.
func TestStepAdmitsBetweenSteps(t *testing.T) {
	m := tinyModel(t)
	ps := prompts(9)
	want := make([][]int32, len(ps))
	for i, p := range ps {
		alone := newSampler(t, m, nil, Config{Slots: 1, MaxLen: 64})
		turns, err := alone.Generate(context.Background(), [][]int32{p}, []Params{sampling(uint64(100 + i))})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = turns[0].Tokens
	}
	// PrefillTokens 8 splits the longer prompts over several steps while
	// others decode.
	s := newSampler(t, m, nil, Config{Slots: 3, MaxLen: 64, PrefillTokens: 8})
	got := make([][]int32, len(ps))
	var active []*Seq
	index := map[*Seq]int{}
	next, steps := 0, 0
	for next < len(ps) || len(active) > 0 {
		// Admit one sequence per step at most, so admissions interleave
		// with decoding.
		if next < len(ps) && s.FreeSlots() > 0 {
			q, err := s.Start(ps[next], sampling(uint64(100+next)))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Begin(q); err != nil {
				t.Fatal(err)
			}
			index[q] = next
			active = append(active, q)
			next++
		}
		if err := s.Step(context.Background(), active); err != nil {
			t.Fatal(err)
		}
		steps++
		keep := active[:0]
		for _, q := range active {
			if q.Done() {
				got[index[q]] = q.Turn.Tokens
				s.Release(q)
			} else {
				keep = append(keep, q)
			}
		}
		active = keep
	}
	for i := range ps {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("sequence %d: stepped %v, alone %v", i, got[i], want[i])
		}
	}
	if steps < 10 {
		t.Errorf("only %d steps: the sequences did not overlap as intended", steps)
	}
}

// TestStepChecksItsSequences: a sequence listed twice or released fails
// the step before any Forward.
func TestStepChecksItsSequences(t *testing.T) {
	m := tinyModel(t)
	s := newSampler(t, m, nil, Config{Slots: 2, MaxLen: 16})
	q, err := s.Start([]int32{1, 2}, sampling(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Step(context.Background(), []*Seq{q, q}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("listed twice: %v", err)
	}
	s.Release(q)
	if err := s.Step(context.Background(), []*Seq{q}); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("released: %v", err)
	}
	if err := s.Begin(q); err == nil {
		t.Error("Begin on a released sequence succeeded")
	}
}

// TestSetAdapterNeedsFreeSlots: the adapter cannot change under a
// sequence's cached keys.
func TestSetAdapterNeedsFreeSlots(t *testing.T) {
	m := tinyModel(t)
	s := newSampler(t, m, nil, Config{Slots: 2, MaxLen: 16})
	q, err := s.Start([]int32{1, 2}, sampling(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAdapter(nil); err == nil || !strings.Contains(err.Error(), "1 sequences") {
		t.Errorf("with a slot held: %v", err)
	}
	s.Release(q)
	if err := s.SetAdapter(nil); err != nil {
		t.Error(err)
	}
}

// TestTopLogprobs: at temperature 0 the best alternative is the sampled
// token with the sampler's own log-prob, the list is sorted and its
// probabilities are those of the full log-softmax.
func TestTopLogprobs(t *testing.T) {
	m := tinyModel(t)
	s := newSampler(t, m, nil, Config{Slots: 1, MaxLen: 32})
	p := DefaultParams()
	p.Temperature, p.MaxTokens, p.TopLogprobs = 0, 6, 5
	turns, err := s.Generate(context.Background(), [][]int32{{3, 4, 5}}, []Params{p})
	if err != nil {
		t.Fatal(err)
	}
	turn := turns[0]
	if len(turn.TopLogprobs) != len(turn.Tokens) {
		t.Fatalf("%d top lists for %d tokens", len(turn.TopLogprobs), len(turn.Tokens))
	}
	for i, top := range turn.TopLogprobs {
		if len(top) != 5 {
			t.Fatalf("token %d: %d alternatives, want 5", i, len(top))
		}
		if top[0].ID != turn.Tokens[i] || math.Abs(float64(top[0].Logprob-turn.Logprobs[i])) > 1e-5 {
			t.Errorf("token %d: best alternative %+v, sampled %d with log-prob %v", i, top[0], turn.Tokens[i], turn.Logprobs[i])
		}
		for k := 1; k < len(top); k++ {
			if top[k].Logprob > top[k-1].Logprob {
				t.Errorf("token %d: alternatives out of order: %+v", i, top)
			}
		}
	}
	p.TopLogprobs = MaxTopLogprobs + 1
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "top_logprobs") {
		t.Errorf("top_logprobs %d: %v", p.TopLogprobs, err)
	}
}

// TestTopOfMatchesASort compares TopOf with a full sort (probability
// descending, id ascending) on rows with many ties.
func TestTopOfMatchesASort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		row := make([]float32, 1+rng.IntN(40))
		for i := range row {
			row[i] = float32(rng.IntN(6)) - 2 // few distinct values: ties
		}
		n := rng.IntN(len(row) + 2)
		ids := make([]int, len(row))
		for i := range ids {
			ids[i] = i
		}
		sort.SliceStable(ids, func(a, b int) bool { return row[ids[a]] > row[ids[b]] })
		var z float64
		for _, x := range row {
			z += math.Exp(float64(x))
		}
		got := TopOf(row, n)
		if len(got) != min(n, len(row)) {
			t.Fatalf("trial %d: %d entries, want %d", trial, len(got), min(n, len(row)))
		}
		for k, e := range got {
			if int(e.ID) != ids[k] {
				t.Fatalf("trial %d: entry %d is id %d, want %d (row %v)", trial, k, e.ID, ids[k], row)
			}
			if want := float64(row[e.ID]) - math.Log(z); math.Abs(float64(e.Logprob)-want) > 1e-5 {
				t.Fatalf("trial %d: log-prob %v, want %v", trial, e.Logprob, want)
			}
		}
	}
}

// TestPromptLogprobs agrees with the model's own TokenLogprobs, the
// function the trainer scores sequences with.
func TestPromptLogprobs(t *testing.T) {
	m := tinyModel(t)
	ids := []int32{5, 9, 2, 40, 41, 3}
	lps, tops, err := PromptLogprobs(m, ids, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.TokenLogprobs(ids, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(lps) != len(want) || len(tops) != len(want) {
		t.Fatalf("%d log-probs and %d top lists, want %d", len(lps), len(tops), len(want))
	}
	for i := range want {
		if math.Abs(float64(lps[i]-want[i])) > 1e-5 {
			t.Errorf("token %d: %v, TokenLogprobs %v", i+1, lps[i], want[i])
		}
		if tops[i][0].Logprob < lps[i]-1e-6 {
			t.Errorf("token %d: best alternative %v below the token's own %v", i+1, tops[i][0].Logprob, lps[i])
		}
	}
}
