package pyenv

import (
	"context"
	"errors"
	"testing"

	"github.com/grpo-dev/grpo/env"
)

// A v1 taskset named by its path plays and scores as an env.Environment:
// its tasks are the train split, the null harness ends each episode at
// the answer, the task's rewards are the reward and its metrics.
func TestPythonEnvV1Taskset(t *testing.T) {
	o := withStubVerifiers(t)
	e := newPython(t, "../pybridge/testdata/envs/v1_reverse.py", map[string]any{"n": 2}, o)
	exs, err := e.Examples("train")
	if err != nil || len(exs) != 2 || exs[1].ID != "train-1" || exs[1].Answer != "reward" {
		t.Fatalf("train = %+v, %v", exs, err)
	}
	if _, err := e.Examples("eval"); !errors.Is(err, env.ErrNoSplit) {
		t.Errorf("eval: %v, want ErrNoSplit", err)
	}
	ro := playPython(t, e, exs[1], "<reversed_text>reward</reversed_text>")
	res := e.Rubric().Score(context.Background(), ro)
	if len(res.Errors) > 0 || res.Reward != 1 || res.Metrics["reward/lcs"] != 1 {
		t.Errorf("score = %+v", res)
	}
	// The multi-turn one, through its Env's run.
	c := newPython(t, "../pybridge/testdata/envs/v1_codeword.py", nil, o)
	exs, _ = c.Examples("train")
	ro = playPython(t, c, exs[1], "B", "BA", "BAD")
	if res := c.Rubric().Score(context.Background(), ro); res.Reward != 1 || res.Metrics["reward/turns"] != 3 {
		t.Errorf("codeword score = %+v", res)
	}
}
