package sampler

import (
	"fmt"
	"slices"

	"github.com/grpo-dev/grpo/model"
)

// group is the sequences StartGroup started on one prompt: one of them
// prefills it, and the others fork the cache blocks of its first forkLen
// positions (all but the prompt's last token, which each prefills itself
// so it gets logits of its own) once those positions are in the cache.
type group struct {
	members []*Seq
	forkLen int
	// shared is the blocks reserved once for the group: the full blocks
	// of the forked positions, which no member copies.
	shared int
}

func (g *group) leave(q *Seq) {
	g.members = slices.DeleteFunc(g.members, func(m *Seq) bool { return m == q })
}

// source is a member whose first forkLen positions are in the cache (the
// one that prefilled them, or one that forked them), or nil.
//
// With exact set (a model with linear-attention layers, whose per-slot
// state holds every token a sequence has consumed, not just positions
// the way KV blocks do) only a member that has consumed exactly the
// prompt can be forked from. A member must also still map the blocks a
// fork needs: one past the prompt may have returned sliding-window blocks
// (model.KVCache.CanFork), and then the sequence prefills the prompt
// itself.
func (g *group) source(exact bool, cache *model.KVCache) *Seq {
	for _, m := range g.members {
		if !m.awaitsFork && (m.cached == g.forkLen || !exact && m.cached > g.forkLen) && cache.CanFork(m.slot, g.forkLen) {
			return m
		}
	}
	return nil
}

// prefiller is the member still prefilling the prompt, or nil.
func (g *group) prefiller() *Seq {
	for _, m := range g.members {
		if !m.awaitsFork && m.cached < g.forkLen {
			return m
		}
	}
	return nil
}

// BlocksFor is the blocks a group of n sequences on a prompt of promptLen
// tokens reserves (GroupBlocks with this sampler's sizes).
func (s *Sampler) BlocksFor(promptLen, n int) int {
	return GroupBlocks(promptLen, n, s.cfg.MaxLen, s.cfg.BlockSize, !s.cfg.NoPrefixSharing)
}

// CanStart reports whether a group of n sequences on a prompt of
// promptLen tokens can start now: n free slots and the blocks BlocksFor
// counts not reserved by the sequences already started.
func (s *Sampler) CanStart(promptLen, n int) bool {
	return n <= len(s.free) && s.BlocksFor(promptLen, n) <= s.cfg.Blocks-s.reserved
}

// StartGroup takes a free slot for each of len(params) new sequences that
// begin with the same prompt, as a GRPO group's rollouts do. The prompt is
// prefilled once: the first sequence prefills it, the others share its
// cache blocks (reference-counted; the partly filled last block is copied
// by whichever writes into it first) and prefill only the prompt's last
// token themselves, each with its own sampling parameters and random
// stream, so each draws exactly what it would after a prefill of its own.
// Later turns of each sequence continue in blocks of its own. It fails,
// starting nothing, when the slots or the blocks (CanStart) are short.
func (s *Sampler) StartGroup(prompt []int32, params []Params) ([]*Seq, error) {
	for i, p := range params {
		if err := p.Validate(); err != nil {
			if len(params) > 1 {
				return nil, fmt.Errorf("sequence %d: %w", i, err)
			}
			return nil, err
		}
		if len(p.Stop) > 0 && s.dec == nil {
			return nil, fmt.Errorf("stop strings %q need a sampler built with a Decoder (the tokenizer)", p.Stop)
		}
	}
	switch {
	case s.cache == nil:
		return nil, fmt.Errorf("sampler is closed")
	case len(params) == 0:
		return nil, fmt.Errorf("a group of no sequences")
	case len(prompt) == 0:
		return nil, fmt.Errorf("empty prompt: a sequence needs at least one token to condition on")
	case len(prompt) >= s.cfg.MaxLen:
		return nil, fmt.Errorf("prompt of %d tokens leaves no room in the cache length %d (%s); shorten the prompt (the system prompt or the example's text)", len(prompt), s.cfg.MaxLen, cacheLenSource)
	case len(s.free) == 0:
		return nil, fmt.Errorf("all %d cache slots hold sequences; Release finished ones or raise slots", s.cfg.Slots)
	case len(s.free) < len(params):
		return nil, fmt.Errorf("%d sequences need %d cache slots, %d of %d are free; Release finished ones or raise slots", len(params), len(params), len(s.free), s.cfg.Slots)
	case !s.CanStart(len(prompt), len(params)):
		return nil, fmt.Errorf("%d sequences of up to %d tokens need %d cache blocks, %d of %d are not reserved; Release finished ones, or check CanStart and queue",
			len(params), s.cfg.MaxLen, s.BlocksFor(len(prompt), len(params)), s.cfg.Blocks-s.reserved, s.cfg.Blocks)
	}
	v := s.m.Config.VocabSize
	for i, t := range prompt {
		if t < 0 || int(t) >= v {
			return nil, fmt.Errorf("prompt token %d (index %d) is outside the model's vocabulary of %d", t, i, v)
		}
	}
	share := !s.cfg.NoPrefixSharing
	sh := sharedBlocks(len(prompt), len(params), s.cfg.BlockSize, share)
	own := seqBlocks(s.cfg.MaxLen, s.cfg.BlockSize) - sh
	var g *group
	if len(params) > 1 && share {
		g = &group{forkLen: len(prompt) - 1, shared: sh}
		s.reserved += sh
	}
	qs := make([]*Seq, len(params))
	for i, p := range params {
		slot := s.free[len(s.free)-1]
		s.free = s.free[:len(s.free)-1]
		q := &Seq{s: s, slot: slot, params: p, tokens: append([]int32(nil), prompt...), own: own}
		s.reserved += q.own
		q.params.Stop = append([]string(nil), p.Stop...)
		q.params.StopTokens = append([]int32(nil), p.StopTokens...)
		q.rng, q.pcg = seqStream(p.Seed)
		for _, st := range p.Stop {
			q.stopMax = max(q.stopMax, len(st))
		}
		if g != nil {
			q.group = g
			q.awaitsFork = i > 0 && g.forkLen > 0
			g.members = append(g.members, q)
		}
		qs[i] = q
	}
	return qs, nil
}

// forkPending lets each live sequence that awaits its group's prompt fork
// it once a member holds it in the cache. If the member prefilling it is
// not in this step (released, or not listed), the sequence prefills the
// prompt itself instead, so a step never waits on a sequence it does not
// run.
func (s *Sampler) forkPending(live []*Seq) error {
	for _, q := range live {
		if !q.awaitsFork {
			continue
		}
		g := q.group
		if src := g.source(s.m.Config.LinearLayers() > 0, s.cache); src != nil {
			if err := s.cache.Fork(q.slot, src.slot, g.forkLen); err != nil {
				return fmt.Errorf("sampler: sharing the prompt: %w", err)
			}
			q.cached, q.awaitsFork = g.forkLen, false
			if s.recordingRouting() {
				// The forked positions' routing is the source's record
				// of them (the same tokens after the same prefix),
				// copied before q records any token of its own, so
				// q.Experts covers every token q has in the cache.
				n := s.m.Config.RoutingLen(g.forkLen)
				q.experts = append(q.experts[:0], src.experts[:n]...)
			}
			s.stats.Forked++
			continue
		}
		if p := g.prefiller(); p == nil || p.stepMark != s.stepMark {
			q.awaitsFork = false // prefills the whole prompt itself
		}
	}
	return nil
}

// forkPoint is where q, prefilling its group's prompt, must pause so that
// members of this step can fork its state, or 0 for no pause. Only a
// model with linear-attention layers pauses: its state after forkLen
// tokens is gone once the prefiller consumes the last prompt token,
// whereas KV blocks keep every position.
func (s *Sampler) forkPoint(q *Seq) int {
	g := q.group
	if g == nil || s.m.Config.LinearLayers() == 0 || q.awaitsFork || q.cached >= g.forkLen {
		return 0
	}
	for _, m := range g.members {
		if m.awaitsFork && m.stepMark == s.stepMark {
			return g.forkLen
		}
	}
	return 0
}
