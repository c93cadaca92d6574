package gepa

import (
	"context"
	"fmt"
)

// mergePair picks two non-dominated candidates to merge: drawn as parents
// are (by fronts), distinct, neither the other's ancestor (a merge with
// one's own ancestor adds nothing the descendant lacks), and not merged
// before. A few draws, then the first such pair in id order; ok is false
// when there is none.
func (op *optimizer) mergePair() (a, b int, ok bool) {
	ids, w := NonDominated(op.st.Pool, Fronts(op.st.Pool))
	if len(ids) < 2 {
		return 0, 0, false
	}
	valid := func(a, b int) bool {
		if a == b || isAncestor(op.st.Pool, a, b) || isAncestor(op.st.Pool, b, a) {
			return false
		}
		for _, p := range op.st.Merged {
			if p == [2]int{min(a, b), max(a, b)} {
				return false
			}
		}
		return true
	}
	total := sum(w)
	for range 10 {
		a, b := weightedPick(ids, w, op.rng.sel.IntN(total)), weightedPick(ids, w, op.rng.sel.IntN(total))
		if valid(a, b) {
			return min(a, b), max(a, b), true
		}
	}
	for i, a := range ids {
		for _, b := range ids[i+1:] {
			if valid(a, b) {
				return a, b, true
			}
		}
	}
	return 0, 0, false
}

// merge asks the teacher to combine a and b, scores the result on a
// subsample of the validation set where a and b differ (their own scores
// there are known: no calls), and keeps it when it does at least as well
// as the better of the two there; the rest of the validation set then
// completes its scores.
func (op *optimizer) merge(ctx context.Context, a, b int) (Record, error) {
	st := op.st
	st.MergesDue--
	st.MergesTried++
	st.Merged = append(st.Merged, [2]int{a, b})
	ca, cb := st.Pool[a], st.Pool[b]
	var differ, same []int
	onlyA, onlyB := 0, 0
	for i := range ca.ValScores {
		switch {
		case ca.ValScores[i] > cb.ValScores[i]:
			onlyA++
			differ = append(differ, i)
		case ca.ValScores[i] < cb.ValScores[i]:
			onlyB++
			differ = append(differ, i)
		default:
			same = append(same, i)
		}
	}
	op.rng.sel.Shuffle(len(differ), func(i, j int) { differ[i], differ[j] = differ[j], differ[i] })
	op.rng.sel.Shuffle(len(same), func(i, j int) { same[i], same[j] = same[j], same[i] })
	sub := append(differ, same...)[:min(op.o.MinibatchSize, len(ca.ValScores))]
	rec := Record{Kind: "merge", Parents: []int{a, b}, Minibatch: sub}
	text, err := op.reflect(ctx, mergePrompt(ca.Text, cb.Text, onlyA, onlyB))
	if err != nil {
		return rec, fmt.Errorf("iteration %d: merging %d and %d: %w", st.Iteration, a, b, err)
	}
	if text == "" || text == ca.Text || text == cb.Text {
		rec.Reason = "the teacher's merge held no new instruction"
		return rec, nil
	}
	var sa, sb float64
	for _, i := range sub {
		sa += ca.ValScores[i]
		sb += cb.ValScores[i]
	}
	rec.ParentScores = []float64{sa, sb}
	got, err := op.validate(ctx, text, sub)
	if err != nil {
		return rec, fmt.Errorf("iteration %d: evaluating the merge of %d and %d: %w", st.Iteration, a, b, err)
	}
	rec.ChildScores = got
	if sum(got) < max(sa, sb) {
		rec.Reason = fmt.Sprintf("subsample score %.4g is below the better parent's %.4g", sum(got), max(sa, sb))
		return rec, nil
	}
	inSub := map[int]bool{}
	for _, i := range sub {
		inSub[i] = true
	}
	var rest []int
	for i := range ca.ValScores {
		if !inSub[i] {
			rest = append(rest, i)
		}
	}
	val := make([]float64, len(ca.ValScores))
	for k, i := range sub {
		val[i] = got[k]
	}
	if len(rest) > 0 {
		more, err := op.validate(ctx, text, rest)
		if err != nil {
			return rec, fmt.Errorf("iteration %d: validating the merge of %d and %d: %w", st.Iteration, a, b, err)
		}
		for k, i := range rest {
			val[i] = more[k]
		}
	}
	op.accept(&rec, text, []int{a, b}, val)
	return rec, nil
}
