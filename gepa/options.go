package gepa

import (
	"errors"
	"fmt"
)

// Options configure Run.
type Options struct {
	// SeedPrompt is the first candidate: the environment's own system
	// prompt.
	SeedPrompt string
	// MaxCalls is the budget of metric calls: rollouts scored, the seed's
	// validation included. An iteration starts only when what it may
	// spend (two minibatches and a full validation) still fits, so the
	// run never spends more.
	MaxCalls int
	// MinibatchSize is the train examples a reflection sees.
	MinibatchSize int
	// PerfectScore, when set, skips reflecting on a minibatch whose every
	// rollout scored at least it (there is nothing to learn from it).
	PerfectScore *float64
	// UseMerge adds merge iterations: after an accepted mutation, the
	// next iteration asks the teacher to combine two non-dominated
	// candidates (at most MaxMergeInvocations times in a run).
	UseMerge            bool
	MaxMergeInvocations int
	// Seed seeds parent selection, the minibatch shuffles and the
	// sampling seeds of every evaluation.
	Seed uint64
	// Dir is the run directory the state and outputs go to; "" keeps
	// everything in memory (no resume). Run owns it: nothing else may
	// write there meanwhile (RunConfig locks it).
	Dir string
	// Settings identify the run: a run directory whose saved settings
	// differ is refused rather than resumed. MaxCalls is not part of
	// them, so a finished run resumes with a larger budget.
	Settings map[string]any
	// OnIteration hears each finished iteration (the seed's validation is
	// iteration 0).
	OnIteration func(Progress)
	// Logf, if set, hears one line per iteration and per notable event.
	Logf func(format string, args ...any)
}

// Progress is where a run stands after an iteration.
type Progress struct {
	Iteration  int
	Calls      int
	MaxCalls   int
	Candidates int
	BestID     int
	BestScore  float64
	// Record is the iteration's results.jsonl row.
	Record Record
}

func (o *Options) check(s Student) error {
	var errs []error
	if o.MaxCalls < 1 {
		errs = append(errs, fmt.Errorf("max_calls = %d: must be at least 1", o.MaxCalls))
	}
	if o.MinibatchSize < 1 {
		errs = append(errs, fmt.Errorf("minibatch_size = %d: must be at least 1", o.MinibatchSize))
	}
	if n := s.TrainSize(); n < o.MinibatchSize {
		errs = append(errs, fmt.Errorf("the train set has %d examples, fewer than minibatch_size = %d: lower minibatch_size or give the environment more train examples", n, o.MinibatchSize))
	}
	if s.ValSize() < 1 {
		errs = append(errs, errors.New("the validation set is empty: num_val must be at least 1 and the environment's eval split must hold examples"))
	} else if o.MaxCalls < s.ValSize() {
		errs = append(errs, fmt.Errorf("max_calls = %d is less than the %d validation examples: the seed prompt's validation alone takes %d calls", o.MaxCalls, s.ValSize(), s.ValSize()))
	}
	if o.UseMerge && o.MaxMergeInvocations < 1 {
		errs = append(errs, fmt.Errorf("max_merge_invocations = %d: must be at least 1 when use_merge is on", o.MaxMergeInvocations))
	}
	return errors.Join(errs...)
}

// iterationCost is the most calls one iteration can spend: the parent's
// and the child's minibatch, then the child's full validation (a merge
// spends at most one validation).
func (o *Options) iterationCost(s Student) int {
	return 2*o.MinibatchSize + s.ValSize()
}
