package sampler

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/model"
)

// The step-level API lets a scheduler batch continuously: it Begins a turn
// for each sequence it admits and calls Step in a loop, adding new
// sequences and releasing finished ones between steps, so a sequence never
// waits for a whole batch to end. Run is this loop over a fixed set.

// Begin starts a new turn for q, as Run does for each of its sequences:
// the turn's result so far is cleared and the next Step prefills q's
// pending tokens. A sequence whose slot is already full begins Done.
func (s *Sampler) Begin(q *Seq) error {
	if err := s.owns(q); err != nil {
		return fmt.Errorf("sequence %v", err)
	}
	q.beginTurn()
	return nil
}

// Done reports whether q's current turn has ended (see Turn for how).
func (q *Seq) Done() bool { return q.done }

// Step runs one Forward call over the sequences of seqs whose turn is not
// Done: pending tokens are prefilled (packed up to PrefillTokens, a long
// prompt over several steps) and each sequence whose pending tokens are
// all in the cache samples one token. Done sequences are skipped, so a
// caller may pass its whole active set. Errors are Run's.
func (s *Sampler) Step(ctx context.Context, seqs []*Seq) error {
	s.mark++
	live := s.liveBuf[:0]
	for i, q := range seqs {
		if err := s.owns(q); err != nil {
			return fmt.Errorf("sequence %d %v", i, err)
		}
		if q.mark == s.mark {
			return fmt.Errorf("sequence %d is listed twice", i)
		}
		q.mark = s.mark
		if !q.done {
			live = append(live, q)
		}
	}
	s.liveBuf = live
	if coll := s.expertParallel(); coll != nil {
		_, err := s.lockstep(ctx, coll, live) // every rank's Step together (lockstep.go)
		return err
	}
	if len(live) == 0 {
		return nil
	}
	return s.step(ctx, live)
}

// owns checks that q is a live sequence of this sampler.
func (s *Sampler) owns(q *Seq) error {
	switch {
	case q == nil || q.s != s:
		return fmt.Errorf("does not belong to this sampler")
	case q.slot < 0:
		return fmt.Errorf("was released")
	}
	return nil
}

// step is one Forward call over live (no sequence Done, none twice): the
// batch takes each sequence's pending tokens in order until PrefillTokens
// is reached, and the sequences whose pending tokens all fit sample.
func (s *Sampler) step(ctx context.Context, live []*Seq) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.stepMark++
	for _, q := range live {
		q.stepMark = s.stepMark
	}
	if err := s.forkPending(live); err != nil {
		return err
	}
	if s.staticOK(live) {
		return s.staticStep(live, 0)
	}
	return s.forwardStep(live)
}

// forwardStep is step's Forward call over live: the batch takes each
// sequence's pending tokens in order until PrefillTokens is reached, and
// the sequences whose pending tokens all fit sample. Under expert
// parallelism a batch left empty (every sequence waits for its group's
// prompt) still takes part in the other ranks' Forward (lockstep.go).
func (s *Sampler) forwardStep(live []*Seq) error {
	s.static.loaded = nil // the device's copy of the set goes stale
	b := &s.batch
	b.Tokens, b.Slots, b.Positions = b.Tokens[:0], b.Slots[:0], b.Positions[:0]
	rows, ready := s.rows[:0], s.ready[:0]
	s.spans = s.spans[:0]
	for _, q := range live {
		if q.awaitsFork {
			continue // its group's prompt is being prefilled
		}
		room := s.cfg.PrefillTokens - b.Len()
		if room <= 0 {
			break
		}
		pending := len(q.tokens) - q.cached
		n := min(pending, room)
		if stop := s.forkPoint(q); stop > q.cached {
			n = min(n, stop-q.cached)
		}
		b.Add(q.slot, q.cached, q.tokens[q.cached:q.cached+n]...)
		s.spans = append(s.spans, span{q, n})
		q.cached += n
		if n == pending {
			rows = append(rows, int32(b.Len()-1))
			ready = append(ready, q)
		}
	}
	s.rows, s.ready = rows, ready
	if b.Len() == 0 && s.m.ExpertParallel() != nil {
		return s.forwardIdle()
	}
	s.prepareRecord()
	s.stats.Forwards++
	s.stats.ForwardTokens += b.Len()
	if len(ready) == 0 {
		// Only part of a long prompt went in: Forward still has to write
		// its keys and values, but there is nothing to sample. Forward
		// returns at least one row (nil rows would mean all of them).
		logits, err := s.m.Forward(s.cache, b, []int32{int32(b.Len() - 1)})
		if err != nil {
			return fmt.Errorf("sampler: %w", err)
		}
		s.m.Backend.Free(logits)
		s.distributeRecord()
		return nil
	}
	logits, err := s.m.Forward(s.cache, b, rows)
	if err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	s.distributeRecord()
	err = s.sampleRows(logits, s.m.Config.VocabSize, ready)
	s.m.Backend.Free(logits)
	return err
}

// batchState is the step's reusable staging, so a decode step allocates
// nothing on the host once warm.
type batchState struct {
	batch   model.Batch
	rows    []int32
	ready   []*Seq
	liveBuf []*Seq
	mark    uint64  // Step's generation, to catch a sequence listed twice
	spans   []span  // each sequence's tokens in the batch, for the routing record
	record  []int32 // the batch's routing record (routing.go)
	// stepMark counts step calls, so a step knows which sequences it runs
	stepMark uint64
}
