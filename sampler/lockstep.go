package sampler

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Lockstep under expert parallelism. A model whose experts are sharded
// over ranks (model.ShardExperts: each rank a sampler of its own, over
// its own model and cache, sampling its own share of the sequences)
// makes a collective call in every sparse layer of every forward: a
// Forward's exchange (counts, then rows) or a static decode step's
// fixed all-to-alls. Every rank must therefore make the same calls in
// the same order, whatever its own sequences need. The sampler keeps its
// ranks in step with one small host collective per iteration
// (ExchangeCounts of two values a rank):
//
//   - each rank says what its live sequences need: nothing, a Forward
//     (some prompt or appended tokens to prefill, or a step the static
//     path does not take), or a static decode step with its bucket;
//   - if any rank needs a Forward, every rank runs one: its own live
//     sequences through the Forward path (decoding rows included), or
//     model.ForwardIdle with none;
//   - else if any rank can decode, every rank runs a static step in the
//     largest of the buckets proposed (model.Decoder.LoadBucket), a rank
//     with no sequence left a step of padding only;
//   - else every rank is done and leaves Run together.
//
// Generate agrees the same way, once per wave, on whether any rank still
// has prompts: a rank whose prompts are done runs empty Runs (idle
// steps) until every rank's are. Step is one iteration. So the ranks of
// one model must drive their samplers alike: call Generate together, or
// Run together (each with its own sequences, none for a rank with
// nothing to do), or Step together the same number of times, with the
// same Slots. A rank whose step fails aborts the collective, so the
// others fail too instead of waiting for it. A model that holds every
// expert never takes this path: its sampler's behaviour is unchanged.

// What a rank's live sequences need this iteration (lockstep).
const (
	needNothing = iota
	needStatic
	needForward
)

// expertParallel is the sampler's model's collective, nil when the model
// holds every expert.
func (s *Sampler) expertParallel() kernels.Collective { return s.m.ExpertParallel() }

// agree sends every rank this rank's values and returns every rank's,
// rank after rank (ExchangeCounts with the same block for each rank).
func agree(coll kernels.Collective, mine ...int) ([]int, error) {
	counts := make([]int, 0, coll.Size()*len(mine))
	for range coll.Size() {
		counts = append(counts, mine...)
	}
	return coll.ExchangeCounts(counts)
}

// runLockstep is Run's loop under expert parallelism: iterations until
// every rank's sequences are done (live may be empty from the start).
func (s *Sampler) runLockstep(ctx context.Context, coll kernels.Collective, live []*Seq) error {
	for {
		done, err := s.lockstep(ctx, coll, live)
		if err != nil || done {
			if len(s.free) == s.cfg.Slots {
				s.dropPad() // idle steps padded after the last Release
			}
			return err
		}
		next := live[:0]
		for _, q := range live {
			if !q.done {
				next = append(next, q)
			}
		}
		live = next
	}
}

// lockstep is one iteration over live (no sequence Done, none twice):
// the ranks agree on what it runs, and this rank runs its part. done
// reports that no rank had anything to run.
func (s *Sampler) lockstep(ctx context.Context, coll kernels.Collective, live []*Seq) (done bool, err error) {
	defer func() {
		if err != nil {
			coll.Abort(err)
		}
	}()
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.stepMark++
	for _, q := range live {
		q.stepMark = s.stepMark
	}
	if err := s.forkPending(live); err != nil {
		return false, err
	}
	need, bucket := needNothing, 0
	switch {
	case len(live) == 0:
	case s.staticOK(live):
		need, bucket = needStatic, s.decoder().Bucket(len(live))
	default:
		need = needForward
	}
	all, err := agree(coll, need, bucket)
	if err != nil {
		return false, fmt.Errorf("sampler: agreeing on the step with the other ranks: %w", err)
	}
	most, widest := needNothing, 0
	for p := 0; p < len(all); p += 2 {
		most, widest = max(most, all[p]), max(widest, all[p+1])
	}
	switch most {
	case needForward:
		if len(live) == 0 {
			return false, s.forwardIdle()
		}
		return false, s.forwardStep(live)
	case needStatic:
		return false, s.staticStep(live, widest)
	}
	return true, nil
}

// forwardIdle is this rank's part of a Forward the other ranks make.
func (s *Sampler) forwardIdle() error {
	s.static.loaded = nil
	if err := s.m.ForwardIdle(); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	return nil
}

// moreWaves agrees whether any rank has more prompts to Generate.
func moreWaves(coll kernels.Collective, mine bool) (bool, error) {
	v := 0
	if mine {
		v = 1
	}
	all, err := agree(coll, v)
	if err != nil {
		return false, fmt.Errorf("sampler: agreeing on the next wave with the other ranks: %w", err)
	}
	for _, a := range all {
		if a != 0 {
			return true, nil
		}
	}
	return false, nil
}
