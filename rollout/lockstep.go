package rollout

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Plays in step under expert parallelism. A model whose experts are
// sharded over ranks (model.ShardExperts) is sampled by one sampler per
// rank, each over its own share of a call's episodes, and the sampler
// keeps each Run's ranks in step (sampler/lockstep.go): every rank's k-th
// Run meets every other rank's k-th. How many Runs a rank's Play makes
// depends on its own episodes — their turns, the waves its cache admits,
// none for a rank with no examples — so before each Run the ranks agree
// whether any of them runs one (an ExchangeCounts of one value a rank),
// and a rank whose episodes are done runs empty Runs, a part in the
// others' forwards, until no rank has one left (finish). A Play that
// fails aborts the collective, so the other ranks' calls end too.

// lockstepRunner is samplerRunner over an expert-sharded model.
type lockstepRunner struct {
	samplerRunner
	coll kernels.Collective
}

// runnerOf is the turnRunner that plays on s: in step with the other
// ranks when s's model is expert-sharded.
func runnerOf(s samplerRunner) turnRunner {
	if coll := s.s.Model().ExpertParallel(); coll != nil {
		return lockstepRunner{samplerRunner: s, coll: coll}
	}
	return s
}

// Run is one Run of this rank's sequences, once the ranks agree there is
// one to run.
func (r lockstepRunner) Run(ctx context.Context, seqs []turnSeq) error {
	if _, err := r.agree(true); err != nil {
		return err
	}
	return r.samplerRunner.Run(ctx, seqs)
}

// finish runs empty Runs while another rank still runs its episodes'.
func (r lockstepRunner) finish(ctx context.Context) error {
	for {
		more, err := r.agree(false)
		if err != nil || !more {
			return err
		}
		if err := r.samplerRunner.Run(ctx, nil); err != nil {
			return err
		}
	}
}

// agree tells every rank whether this one has a Run to make and reports
// whether any rank has.
func (r lockstepRunner) agree(mine bool) (bool, error) {
	v := 0
	if mine {
		v = 1
	}
	counts := make([]int, r.coll.Size())
	for i := range counts {
		counts[i] = v
	}
	all, err := r.coll.ExchangeCounts(counts)
	if err != nil {
		return false, fmt.Errorf("rollouts: agreeing on the next turn with the other expert-parallel ranks: %w", err)
	}
	for _, a := range all {
		if a != 0 {
			return true, nil
		}
	}
	return false, nil
}

// endInStep ends a Play on a runner: a lockstep one runs empty Runs until
// every rank is done, or on an error aborts the collective.
func endInStep(ctx context.Context, run turnRunner, err error) error {
	ls, ok := run.(lockstepRunner)
	switch {
	case !ok:
		return err
	case err != nil:
		ls.coll.Abort(err)
		return err
	}
	if err := ls.finish(ctx); err != nil {
		ls.coll.Abort(err)
		return err
	}
	return nil
}
