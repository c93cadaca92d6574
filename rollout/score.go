package rollout

import (
	"context"
	"sync"

	"github.com/grpo-dev/grpo/rubric"
)

// score runs the rubric over every trajectory, workers at a time (0: 8).
func score(ctx context.Context, rb *rubric.Rubric, trajs []Trajectory, workers int) {
	s := newScorer(ctx, rb, workers, len(trajs))
	for i := range trajs {
		s.add(&trajs[i])
	}
	s.wait()
}

// scorer scores trajectories as their episodes end, on workers of its
// own, so that a rubric's slow work — a judge's request, model-written
// code in the sandbox, a Python environment's reward functions — runs
// while the episodes still playing generate, instead of after the last.
// A trajectory whose episode failed gets reward 0 without the rubric.
type scorer struct {
	ctx context.Context
	rb  *rubric.Rubric
	in  chan *Trajectory
	wg  sync.WaitGroup
}

// newScorer starts workers (0: 8) for at most n trajectories; add never
// blocks.
func newScorer(ctx context.Context, rb *rubric.Rubric, workers, n int) *scorer {
	if workers <= 0 {
		workers = 8
	}
	s := &scorer{ctx: ctx, rb: rb, in: make(chan *Trajectory, n)}
	for range min(workers, max(n, 1)) {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for t := range s.in {
				s.scoreOne(t)
			}
		}()
	}
	return s
}

// add queues a finished trajectory; nothing may change it afterwards.
func (s *scorer) add(t *Trajectory) { s.in <- t }

// wait returns when every queued trajectory is scored.
func (s *scorer) wait() {
	close(s.in)
	s.wg.Wait()
}

func (s *scorer) scoreOne(t *Trajectory) {
	if len(t.Errors) > 0 {
		t.Reward = 0
		t.Metrics = map[string]float64{"errors/episode": 1}
		return
	}
	res := s.rb.Score(s.ctx, rubric.Rollout{Prompt: t.Prompt, Completion: t.Messages, Answer: t.Answer, Info: t.Info})
	t.Reward = res.Reward
	t.Metrics = res.Metrics
	for _, e := range res.Errors {
		t.Errors = append(t.Errors, "rubric: "+e)
	}
}
