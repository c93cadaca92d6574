package gepa

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// TestAcceptanceAndBudget works a run by hand. Train has 4 examples, val
// 3, minibatches of 2, so an iteration may spend 2+2+3 = 7 calls.
//
//	prompt  train           val          the teacher's proposals in turn
//	P0      .5 .5 .5 .5     .5 .5 0      (seed)
//	P1      .5 .5 .5 .5     —            iteration 1: ties the parent on the minibatch: rejected (4 calls)
//	P2      1 1 1 1         1 0 0        iteration 2: beats it: validated (7 calls), candidate 1
//	P3      0 0 0 0         —            iteration 3: loses: rejected (4 calls)
//
// Calls: 3 (seed) + 4 + 7 + 4 = 18; a fourth iteration would need 25 > 24:
// the run stops on its budget. P0 and P2 both average 1/3, so the best is
// still the seed (the earlier of equals).
func TestAcceptanceAndBudget(t *testing.T) {
	s := table(4, 3, map[string][2][]float64{
		"P0": {{.5, .5, .5, .5}, {.5, .5, 0}},
		"P1": {{.5, .5, .5, .5}, nil},
		"P2": {{1, 1, 1, 1}, {1, 0, 0}},
		"P3": {{0, 0, 0, 0}, nil},
	})
	teach := sequence("P1", "P2", "P3")
	res, err := Run(context.Background(), s, teach, Options{SeedPrompt: "P0", MaxCalls: 24, MinibatchSize: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 18 || s.calls != 18 || res.Iterations != 3 || res.StopReason != StopBudget {
		t.Fatalf("calls %d (student counted %d), iterations %d, stop %q; want 18, 18, 3, budget", res.Calls, s.calls, res.Iterations, res.StopReason)
	}
	if len(res.Pool) != 2 || res.Pool[1].Text != "P2" || res.Pool[1].Kind != "reflect" || res.Pool[1].Iteration != 2 ||
		!reflect.DeepEqual(res.Pool[1].ValScores, []float64{1, 0, 0}) {
		t.Fatalf("pool %+v", res.Pool)
	}
	if p := res.Pool[1].Parents; len(p) != 1 || p[0] != 0 {
		t.Errorf("P2's parents %v, want [0] (the only candidate when it was proposed)", p)
	}
	if res.Best.ID != 0 {
		t.Errorf("best %d, want the seed (both average 1/3; the earlier wins)", res.Best.ID)
	}
	// The teacher saw the parent's instruction and its minibatch traces.
	if len(teach.prompts) != 3 || currentInstruction(teach.prompts[0]) != "P0" || !strings.Contains(teach.prompts[0], "reward 0.50") {
		t.Fatalf("teacher prompts: %q", teach.prompts)
	}
	// Iteration 3's parent is whichever was drawn; the reflection shows it.
	last := s.requests[len(s.requests)-2] // the parent's minibatch of iteration 3
	if got := currentInstruction(teach.prompts[2]); got != last.Prompt {
		t.Errorf("iteration 3 reflected on %q but evaluated %q", got, last.Prompt)
	}
	// Both minibatch evaluations of an iteration use the same examples.
	for i := 1; i+1 < len(s.requests); i += 2 {
		a, b := s.requests[i], s.requests[i+1]
		if a.Split == Train && b.Split == Train && !reflect.DeepEqual(a.IDs, b.IDs) {
			t.Errorf("parent on %v, child on %v", a.IDs, b.IDs)
		}
	}
	// One budget more than 24 lets a fourth iteration run.
	s2 := table(4, 3, map[string][2][]float64{
		"P0": {{.5, .5, .5, .5}, {.5, .5, 0}}, "P1": {{.5, .5, .5, .5}, nil},
		"P2": {{1, 1, 1, 1}, {1, 0, 0}}, "P3": {{0, 0, 0, 0}, nil}})
	res, err = Run(context.Background(), s2, sequence("P1", "P2", "P3"), Options{SeedPrompt: "P0", MaxCalls: 25, MinibatchSize: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Iterations != 4 || res.Calls > 25 || res.Calls != s2.calls {
		t.Errorf("max_calls 25: %d iterations, %d calls (student %d); want 4, ≤ 25, equal", res.Iterations, res.Calls, s2.calls)
	}
}

// TestPerfectScoreSkips: a parent that scores perfect_score on its whole
// minibatch is not reflected on: the teacher is not asked, the iteration
// spends the minibatch's 2 calls only.
func TestPerfectScoreSkips(t *testing.T) {
	s := table(2, 1, map[string][2][]float64{"P0": {{1, 1}, {1}}})
	teach := sequence("never")
	one := 1.0
	res, err := Run(context.Background(), s, teach, Options{SeedPrompt: "P0", MaxCalls: 1 + 5*2 + 4, MinibatchSize: 2, PerfectScore: &one})
	if err != nil {
		t.Fatal(err)
	}
	// 15 calls: seed 1, then iterations of 2 while 2+2+1 more fit: 5 of them (11), a sixth needs 16.
	if len(teach.prompts) != 0 || res.Iterations != 5 || res.Calls != 11 || s.calls != 11 {
		t.Errorf("teacher asked %d times, %d iterations, %d calls; want 0, 5, 11", len(teach.prompts), res.Iterations, res.Calls)
	}
}

// TestOptionsRefused: budgets and sizes that cannot work say why.
func TestOptionsRefused(t *testing.T) {
	s := table(2, 5, nil)
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{MaxCalls: 4, MinibatchSize: 1}, "max_calls = 4 is less than the 5 validation examples"},
		{Options{MaxCalls: 10, MinibatchSize: 3}, "fewer than minibatch_size = 3"},
		{Options{MaxCalls: 10, MinibatchSize: 1, UseMerge: true}, "max_merge_invocations = 0"},
	} {
		if _, err := Run(context.Background(), s, sequence("x"), c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
	}
}

// TestMerge: with candidates 1 and 2 both children of the seed, each
// alone on two validation fronts, and a merge due, the iteration merges
// them: the subsample (2 = minibatch_size instances) comes from where
// they differ, their sums there are 1 each, the merge's 2 beat that, and
// the other two validation instances complete its scores: 4 calls in all.
func TestMerge(t *testing.T) {
	s := table(2, 4, map[string][2][]float64{"M": {nil, {1, 1, 1, 1}}})
	op := &optimizer{o: Options{MinibatchSize: 2, UseMerge: true, MaxMergeInvocations: 1}, student: s, teacher: sequence("M"), rng: newRNGs(1),
		st: &state{MergesDue: 1, LastAccepted: true, Pool: []Candidate{
			{ID: 0, Text: "S", Parents: []int{}, ValScores: []float64{0, 0, 0, 0}},
			{ID: 1, Text: "A", Parents: []int{0}, ValScores: []float64{1, 1, 0, 0}},
			{ID: 2, Text: "B", Parents: []int{0}, ValScores: []float64{0, 0, 1, 1}},
		}}}
	rec, err := op.iterate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Kind != "merge" || !reflect.DeepEqual(rec.Parents, []int{1, 2}) || !rec.Accepted || op.st.Calls != 4 || s.calls != 4 {
		t.Fatalf("record %+v, calls %d", rec, op.st.Calls)
	}
	if !reflect.DeepEqual(rec.ParentScores, []float64{1, 1}) && !reflect.DeepEqual(rec.ParentScores, []float64{2, 0}) && !reflect.DeepEqual(rec.ParentScores, []float64{0, 2}) {
		t.Errorf("parent sums on the subsample %v", rec.ParentScores)
	}
	m := op.st.Pool[3]
	if m.Text != "M" || !reflect.DeepEqual(m.Parents, []int{1, 2}) || !reflect.DeepEqual(m.ValScores, []float64{1, 1, 1, 1}) || m.Kind != "merge" {
		t.Errorf("merged candidate %+v", m)
	}
	if op.st.MergesDue != 0 || op.st.MergesTried != 1 {
		t.Errorf("merges due %d tried %d", op.st.MergesDue, op.st.MergesTried)
	}
	// The pair is not merged again, and a candidate is never merged with
	// its ancestor: with only 3 (child of 1 and 2) and 1, 2 dominated, no
	// pair is left and the iteration reflects instead.
	op.st.MergesDue, op.st.LastAccepted = 1, true
	if _, _, ok := op.mergePair(); ok {
		t.Error("a merge pair was found among the merge and its own parents")
	}
}

// TestMergeRejected: a merge that scores below the better parent's sum on
// the subsample is not validated further.
func TestMergeRejected(t *testing.T) {
	s := table(2, 4, map[string][2][]float64{"M": {nil, {0, 0, 0, 0}}})
	op := &optimizer{o: Options{MinibatchSize: 2, UseMerge: true, MaxMergeInvocations: 3}, student: s, teacher: sequence("M"), rng: newRNGs(1),
		st: &state{MergesDue: 1, LastAccepted: true, Pool: []Candidate{
			{ID: 0, Text: "S", Parents: []int{}, ValScores: []float64{0, 0, 0, 0}},
			{ID: 1, Text: "A", Parents: []int{0}, ValScores: []float64{1, 1, 0, 0}},
			{ID: 2, Text: "B", Parents: []int{0}, ValScores: []float64{0, 0, 1, 1}},
		}}}
	rec, err := op.iterate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Kind != "merge" || rec.Accepted || op.st.Calls != 2 || len(op.st.Pool) != 3 {
		t.Fatalf("record %+v, calls %d, pool %d", rec, op.st.Calls, len(op.st.Pool))
	}
}
