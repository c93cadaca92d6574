package eval

import (
	"context"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
)

// failingEngine plays every rollout as an unreachable endpoint does:
// each episode fails before the model's first turn.
type failingEngine struct{ answered int }

func (f failingEngine) Play(_ context.Context, _ env.Environment, exs []env.Example, k int, _ sampler.Params, _ uint64, _ rollout.Options) ([]rollout.Trajectory, error) {
	var out []rollout.Trajectory
	for i, ex := range exs {
		for range k {
			t := rollout.Trajectory{Example: ex, Errors: []string{"generate: dial tcp 127.0.0.1:9: connection refused"}}
			if i < f.answered {
				t.Turns, t.Errors = 1, nil
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// TestEveryRolloutFailedIsAnError (issue 27): an eval whose every
// rollout failed before the model answered is an error naming the first
// failure, not a reward of 0; one that got answers is scored as before.
func TestEveryRolloutFailedIsAnError(t *testing.T) {
	exs := []env.Example{{ID: "a"}, {ID: "b"}}
	o := Options{Examples: exs, NumExamples: -1, RolloutsPerExample: 2}
	_, err := Run(context.Background(), failingEngine{}, nil, "e", o)
	if err == nil || !strings.Contains(err.Error(), "every one of the 4 rollouts failed before the model answered") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error %v", err)
	}
	if _, err := Run(context.Background(), failingEngine{answered: 1}, nil, "e", o); err != nil {
		t.Fatalf("with answers: %v", err)
	}
}
