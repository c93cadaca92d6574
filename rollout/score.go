package rollout

import (
	"context"

	"github.com/grpo-dev/grpo/rubric"
)

// score runs the rubric over every trajectory that did not fail.
func score(ctx context.Context, rb *rubric.Rubric, trajs []Trajectory, workers int) {
	if workers <= 0 {
		workers = 8
	}
	var idx []int
	var rs []rubric.Rollout
	for i := range trajs {
		t := &trajs[i]
		if len(t.Errors) > 0 {
			t.Reward = 0
			t.Metrics = map[string]float64{"errors/episode": 1}
			continue
		}
		idx = append(idx, i)
		rs = append(rs, rubric.Rollout{Prompt: t.Prompt, Completion: t.Messages, Answer: t.Answer, Info: t.Info})
	}
	for k, res := range rb.ScoreAll(ctx, rs, workers) {
		t := &trajs[idx[k]]
		t.Reward = res.Reward
		t.Metrics = res.Metrics
		for _, e := range res.Errors {
			t.Errors = append(t.Errors, "rubric: "+e)
		}
	}
}
