package gepa

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/internal/atomicfile"
	"github.com/grpo-dev/grpo/sampler"
)

// StopFile, created in the run directory, ends the run cleanly before
// its next iteration (the file is removed; running again resumes).
const StopFile = "gepa.stop"

// Stop reasons of a Result.
const (
	StopBudget   = "budget"    // max_calls cannot cover another iteration
	StopFileSeen = "stop file" // gepa.stop appeared
)

// Record is one iteration in results.jsonl.
type Record struct {
	Iteration int `json:"iteration"`
	// Kind is "seed", "reflect", "merge" or "skip" (a perfect minibatch).
	Kind    string `json:"kind"`
	Parents []int  `json:"parents,omitempty"`
	// Minibatch holds the train indices reflected on (for a merge: the
	// validation indices of its subsample).
	Minibatch    []int     `json:"minibatch,omitempty"`
	ParentScores []float64 `json:"parent_scores,omitempty"`
	ChildScores  []float64 `json:"child_scores,omitempty"`
	Accepted     bool      `json:"accepted"`
	// Reason says why a proposal was not accepted.
	Reason    string  `json:"reason,omitempty"`
	Candidate *int    `json:"candidate,omitempty"`
	ValScore  float64 `json:"val_score,omitempty"`
	// Calls is the metric calls spent so far, this iteration's included.
	Calls     int     `json:"calls"`
	BestID    int     `json:"best_candidate"`
	BestScore float64 `json:"best_score"`
}

// Result is a finished (or stopped) run.
type Result struct {
	Pool       []Candidate
	Best       Candidate
	Calls      int
	Iterations int
	// Resumed is true when the run went on from a saved state.
	Resumed bool
	// StopReason is StopBudget or StopFileSeen.
	StopReason string
	History    []HistoryPoint
}

// optimizer is one run in progress.
type optimizer struct {
	o       Options
	student Student
	teacher Teacher
	st      *state
	rng     *rngs
	out     *outputs
}

// Run optimises the student's system prompt with the teacher's
// reflections until the budget is spent or gepa.stop appears. With
// Options.Dir set, a directory holding a run of the same settings is
// resumed from its last finished iteration; a cancelled ctx returns its
// error with that iteration's state saved.
func Run(ctx context.Context, s Student, t Teacher, o Options) (*Result, error) {
	if err := o.check(s); err != nil {
		return nil, err
	}
	op := &optimizer{o: o, student: s, teacher: t, rng: newRNGs(o.Seed)}
	res := &Result{}
	if o.Dir != "" {
		op.out = &outputs{dir: o.Dir}
		// A write killed midway (a SIGKILL during a snapshot) left its
		// temporary; Dir is the caller's alone (Options.Dir).
		removed, err := atomicfile.RemoveStale(o.Dir)
		if err != nil {
			return nil, fmt.Errorf("removing what an interrupted write left in %s: %w", o.Dir, err)
		}
		for _, p := range removed {
			op.logf("removed %s, left by a write that was interrupted", p)
		}
		st, err := loadState(o.Dir)
		if err != nil {
			return nil, err
		}
		if st != nil {
			if ok, err := sameSettings(st.Settings, o.Settings); err != nil {
				return nil, err
			} else if !ok {
				return nil, fmt.Errorf("%s holds a GEPA run of other settings (%s); give another output directory, or delete it to start afresh", o.Dir, settingsDiff(st.Settings, o.Settings))
			}
			if len(st.Pool[0].ValScores) != s.ValSize() || st.Batches.N != s.TrainSize() {
				return nil, fmt.Errorf("%s: the saved run has %d validation and %d train examples, the environment now gives %d and %d; give another output directory", o.Dir, len(st.Pool[0].ValScores), st.Batches.N, s.ValSize(), s.TrainSize())
			}
			if err := op.rng.restore(st); err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(o.Dir, StateFile), err)
			}
			if err := op.out.truncateResults(st.Iteration); err != nil {
				return nil, err
			}
			op.st, res.Resumed = st, true
			op.logf("resumed at iteration %d: %d candidates, %d/%d calls", st.Iteration, len(st.Pool), st.Calls, o.MaxCalls)
		}
	}
	if op.st == nil {
		if err := op.start(ctx); err != nil {
			return nil, err
		}
	}
	for {
		if o.Dir != "" {
			if _, err := os.Stat(filepath.Join(o.Dir, StopFile)); err == nil {
				res.StopReason = StopFileSeen
				if err := os.Remove(filepath.Join(o.Dir, StopFile)); err != nil {
					return nil, fmt.Errorf("removing %s: %w", StopFile, err)
				}
				op.logf("%s found: stopping after iteration %d", StopFile, op.st.Iteration)
				break
			}
		}
		if op.st.Calls+o.iterationCost(s) > o.MaxCalls {
			res.StopReason = StopBudget
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		rec, err := op.iterate(ctx)
		if err != nil {
			return nil, op.failed(err)
		}
		if err := op.finishIteration(rec); err != nil {
			return nil, op.failed(err)
		}
	}
	if op.out != nil {
		if err := op.out.writeSnapshot(op.st, o, res.StopReason, true); err != nil {
			return nil, err
		}
	}
	st := op.st
	res.Pool, res.Best = st.Pool, st.Pool[bestCandidate(st.Pool)]
	res.Calls, res.Iterations, res.History = st.Calls, st.Iteration, st.History
	return res, nil
}

// failed records in metadata.json that the run ended with err (its
// status would otherwise still say "running"), and returns err. An
// interrupted run is not a failed one: it resumes.
func (op *optimizer) failed(err error) error {
	if op.out == nil || op.st == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if werr := op.out.writeMetadata(op.st, op.o, failedPrefix+err.Error()); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

func (op *optimizer) logf(format string, args ...any) {
	if op.o.Logf != nil {
		op.o.Logf(format, args...)
	}
}

// start validates the seed prompt: iteration 0.
func (op *optimizer) start(ctx context.Context) error {
	op.st = &state{Version: stateVersion, Settings: op.o.Settings, Batches: *newMinibatches(op.student.TrainSize(), op.o.MinibatchSize)}
	if op.out != nil {
		if err := op.out.truncateResults(-1); err != nil {
			return err
		}
	}
	scores, err := op.validate(ctx, op.o.SeedPrompt, allIDs(op.student.ValSize()))
	if err != nil {
		return fmt.Errorf("validating the seed prompt: %w", err)
	}
	op.st.Pool = []Candidate{{ID: 0, Text: op.o.SeedPrompt, Parents: []int{}, Kind: "seed", ValScores: scores}}
	id := 0
	return op.finishIteration(Record{Kind: "seed", Accepted: true, Candidate: &id, ValScore: op.st.Pool[0].Mean()})
}

// finishIteration records the iteration: the best so far, the results
// row, then (atomically) the state and the output files, then progress.
func (op *optimizer) finishIteration(rec Record) error {
	st := op.st
	rec.Iteration, rec.Calls = st.Iteration, st.Calls
	best := bestCandidate(st.Pool)
	rec.BestID, rec.BestScore = best, st.Pool[best].Mean()
	st.History = append(st.History, HistoryPoint{Iteration: st.Iteration, Calls: st.Calls, BestID: best, BestScore: rec.BestScore})
	op.rng.save(st)
	if op.out != nil {
		// The results row goes first: a crash before the state is saved
		// leaves a row that the resumed run truncates and writes again.
		if err := op.out.appendResult(rec); err != nil {
			return err
		}
		if err := saveState(op.o.Dir, st); err != nil {
			return fmt.Errorf("saving the GEPA state: %w", err)
		}
		if err := op.out.writeSnapshot(st, op.o, "", rec.Accepted); err != nil {
			return err
		}
	}
	op.logf("iteration %d: %s%s; calls %d/%d; best #%d %.4f", st.Iteration, rec.Kind, verdict(rec), st.Calls, op.o.MaxCalls, best, rec.BestScore)
	if op.o.OnIteration != nil {
		op.o.OnIteration(Progress{Iteration: st.Iteration, Calls: st.Calls, MaxCalls: op.o.MaxCalls, Candidates: len(st.Pool), BestID: best, BestScore: rec.BestScore, Record: rec})
	}
	return nil
}

func verdict(r Record) string {
	switch {
	case r.Kind == "seed":
		return fmt.Sprintf(" validated %.4f", r.ValScore)
	case r.Accepted:
		return fmt.Sprintf(" accepted as #%d (validation %.4f)", *r.Candidate, r.ValScore)
	case r.Reason != "":
		return " rejected: " + r.Reason
	}
	return ""
}

// evaluate runs one metric-counted evaluation; the calls are spent once
// the student answers.
func (op *optimizer) evaluate(ctx context.Context, prompt string, split Split, ids []int) ([]Rollout, error) {
	seed := sampler.DeriveSeed(op.o.Seed, 0x6e7a, uint64(op.st.Calls))
	rolls, err := op.student.Evaluate(ctx, Request{Prompt: prompt, Split: split, IDs: ids, Seed: seed})
	if err != nil {
		return nil, err
	}
	if len(rolls) != len(ids) {
		return nil, fmt.Errorf("the student returned %d rollouts for %d examples", len(rolls), len(ids))
	}
	op.st.Calls += len(ids)
	return rolls, nil
}

func (op *optimizer) validate(ctx context.Context, prompt string, ids []int) ([]float64, error) {
	rolls, err := op.evaluate(ctx, prompt, Val, ids)
	if err != nil {
		return nil, err
	}
	return scoresOf(rolls), nil
}

func (op *optimizer) reflect(ctx context.Context, prompt string) (string, error) {
	seed := sampler.DeriveSeed(op.o.Seed, 0x7eac, uint64(op.st.Calls))
	reply, err := op.teacher.Reflect(ctx, prompt, seed)
	if err != nil {
		return "", fmt.Errorf("teacher: %w", err)
	}
	return ParseInstruction(reply), nil
}

// iterate runs one iteration: a merge when one is due, else a reflective
// mutation.
func (op *optimizer) iterate(ctx context.Context) (Record, error) {
	op.st.Iteration++
	if op.o.UseMerge && op.st.MergesDue > 0 && op.st.LastAccepted {
		op.st.LastAccepted = false
		if a, b, ok := op.mergePair(); ok {
			return op.merge(ctx, a, b)
		}
	}
	op.st.LastAccepted = false
	return op.mutate(ctx)
}

// selectParent draws a non-dominated candidate, weighted by the fronts it
// sits on.
func (op *optimizer) selectParent() int {
	ids, w := NonDominated(op.st.Pool, Fronts(op.st.Pool))
	return weightedPick(ids, w, op.rng.sel.IntN(sum(w)))
}

// mutate is a reflective mutation: the parent's traces on a minibatch go
// to the teacher; its instruction is kept when it beats the parent on the
// same minibatch, and then validated on the whole validation set.
func (op *optimizer) mutate(ctx context.Context) (Record, error) {
	parent := op.selectParent()
	batch := op.st.Batches.next(op.rng.batch)
	rec := Record{Kind: "reflect", Parents: []int{parent}, Minibatch: batch}
	p := op.st.Pool[parent].Text
	traces, err := op.evaluate(ctx, p, Train, batch)
	if err != nil {
		return rec, fmt.Errorf("iteration %d: evaluating candidate %d on its minibatch: %w", op.st.Iteration, parent, err)
	}
	rec.ParentScores = scoresOf(traces)
	if ps := op.o.PerfectScore; ps != nil && allAtLeast(rec.ParentScores, *ps) {
		rec.Kind, rec.Reason = "skip", fmt.Sprintf("every minibatch score reached perfect_score %v", *ps)
		return rec, nil
	}
	child, err := op.reflect(ctx, reflectionPrompt(p, traces))
	if err != nil {
		return rec, fmt.Errorf("iteration %d: %w", op.st.Iteration, err)
	}
	switch {
	case child == "":
		rec.Reason = "the teacher's reply held no instruction"
		return rec, nil
	case child == p:
		rec.Reason = "the teacher returned the parent's instruction unchanged"
		return rec, nil
	}
	after, err := op.evaluate(ctx, child, Train, batch)
	if err != nil {
		return rec, fmt.Errorf("iteration %d: evaluating the new instruction on the minibatch: %w", op.st.Iteration, err)
	}
	rec.ChildScores = scoresOf(after)
	if sum(rec.ChildScores) <= sum(rec.ParentScores) {
		rec.Reason = fmt.Sprintf("minibatch score %.4g does not beat the parent's %.4g", sum(rec.ChildScores), sum(rec.ParentScores))
		return rec, nil
	}
	val, err := op.validate(ctx, child, allIDs(op.student.ValSize()))
	if err != nil {
		return rec, fmt.Errorf("iteration %d: validating the new instruction: %w", op.st.Iteration, err)
	}
	op.accept(&rec, child, []int{parent}, val)
	if op.o.UseMerge {
		op.st.LastAccepted = true
		if op.st.MergesTried+op.st.MergesDue < op.o.MaxMergeInvocations {
			op.st.MergesDue++
		}
	}
	return rec, nil
}

// accept adds a validated candidate to the pool.
func (op *optimizer) accept(rec *Record, text string, parents []int, val []float64) {
	id := len(op.st.Pool)
	op.st.Pool = append(op.st.Pool, Candidate{ID: id, Text: text, Parents: parents, Iteration: op.st.Iteration, Kind: rec.Kind, ValScores: val})
	rec.Accepted, rec.Candidate, rec.ValScore = true, &id, op.st.Pool[id].Mean()
}

func scoresOf(rolls []Rollout) []float64 {
	s := make([]float64, len(rolls))
	for i, r := range rolls {
		s[i] = r.Score
	}
	return s
}

func sum[T int | float64](v []T) T {
	var s T
	for _, x := range v {
		s += x
	}
	return s
}

func allAtLeast(v []float64, min float64) bool {
	for _, x := range v {
		if x < min {
			return false
		}
	}
	return true
}

func allIDs(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return ids
}
