package pyenv

import (
	"context"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/env/pybridge"
	"github.com/grpo-dev/grpo/rubric"
)

// groupScorer scores the rollouts of a verifiers rubric with group reward
// functions (functions of states, completions, ...) a group at a time,
// as verifiers' run_group does with score_group. grpo's rubric sees one
// rollout at a time, so the groups are formed here: the episodes of one
// example started together (package rollout starts an example's
// rollouts_per_example episodes one after another, before any of them
// plays) form a group, which is scored once every member has ended
// (Close, a final or failed Respond, or its score being asked for). Each
// member's score waits for that, at most wait; a member a group was scored without (it ended after
// the wait) is scored on its own, as a group of one.
type groupScorer struct {
	b    *pybridge.Bridge
	wait time.Duration

	mu      sync.Mutex
	forming map[string]*group // example id → its group still taking members
	byEp    map[string]*group
}

type group struct {
	ex      string
	members []string
	ended   map[string]bool
	played  map[string]bool // the child holds its State
	sealed  bool
	once    sync.Once
	done    chan struct{}
	scores  map[string]*pybridge.Score
	err     error
}

func newGroupScorer(b *pybridge.Bridge, wait time.Duration) *groupScorer {
	return &groupScorer{b: b, wait: wait, forming: map[string]*group{}, byEp: map[string]*group{}}
}

// join adds a new episode of example exID to the group forming for it.
func (s *groupScorer) join(exID, ep string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.forming[exID]
	if g == nil || g.sealed {
		g = &group{ex: exID, ended: map[string]bool{}, played: map[string]bool{}, done: make(chan struct{})}
		s.forming[exID] = g
	}
	g.members = append(g.members, ep)
	s.byEp[ep] = g
}

// turn records a played turn of ep: its group takes no more members.
func (s *groupScorer) turn(ep string, played bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.byEp[ep]; g != nil {
		g.sealed = true
		g.played[ep] = played
	}
}

// end records that ep is over; the last member to end starts the
// group's scoring.
func (s *groupScorer) end(ep string) {
	s.mu.Lock()
	g := s.byEp[ep]
	if g == nil || g.ended[ep] {
		s.mu.Unlock()
		return
	}
	g.sealed = true
	g.ended[ep] = true
	all := len(g.ended) == len(g.members)
	if all && s.forming[g.ex] == g {
		delete(s.forming, g.ex)
	}
	s.mu.Unlock()
	if all {
		go s.score(g)
	}
}

// score runs score_group once over the members that ended having played.
func (s *groupScorer) score(g *group) {
	g.once.Do(func() {
		s.mu.Lock()
		var eps []string
		for _, ep := range g.members {
			if g.ended[ep] && g.played[ep] {
				eps = append(eps, ep)
			} else if g.ended[ep] {
				delete(s.byEp, ep) // failed: never scored
			}
		}
		s.mu.Unlock()
		scores := map[string]*pybridge.Score{}
		var err error
		if len(eps) > 0 {
			var got []*pybridge.Score
			got, err = s.b.ScoreGroup(context.Background(), eps)
			for i, sc := range got {
				scores[eps[i]] = sc
			}
		}
		s.mu.Lock()
		g.scores, g.err = scores, err
		s.mu.Unlock()
		close(g.done)
	})
}

// result is ep's score from its group's scoring; ok is false when ep is
// not in a group or its group was scored without it.
func (s *groupScorer) result(ctx context.Context, ep string) (sc rubric.Score, ok bool, err error) {
	s.mu.Lock()
	g := s.byEp[ep]
	s.mu.Unlock()
	if g == nil {
		return rubric.Score{}, false, nil
	}
	// A rollout is scored once its episode is over, however the caller
	// ended it (a remote engine's max_turns cap closes nothing).
	s.end(ep)
	timer := time.NewTimer(s.wait)
	defer timer.Stop()
	select {
	case <-g.done:
	case <-timer.C:
		s.score(g) // the others are late: score those that ended
	case <-ctx.Done():
		return rubric.Score{}, false, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byEp, ep)
	if g.err != nil {
		return rubric.Score{}, false, g.err
	}
	if r := g.scores[ep]; r != nil {
		return rubric.Score{Value: r.Reward, Metrics: r.Metrics}, true, nil
	}
	return rubric.Score{}, false, nil
}

// forget removes an episode that will not be scored.
func (s *groupScorer) forget(ep string) {
	s.end(ep)
	s.mu.Lock()
	delete(s.byEp, ep)
	s.mu.Unlock()
}
