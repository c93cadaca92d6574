//go:build slow

// Package demo_test runs the CPU demo end to end and checks its promise:
// grpo train examples/demo.toml finishes in under 10 minutes on 2 cores and
// the mean reward of its last 10% of steps beats its first 10% by at least
// 0.2, and the share of exact reversals in the held-out eval (pass@1) rises
// from under 0.1 at step 0 to at least 0.15 at the last step. It takes
// minutes, so it sits behind the slow build tag:
//
//	go test -tags slow -run TestDemo ./examples/demo/
package demo_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rundir"
	"github.com/grpo-dev/grpo/trainer"
)

const (
	minGain = 0.2
	// pass@1 bounds of the eval at step 0 and at the last step: the run
	// must turn the warm start's rare exact reversals into common ones.
	maxPassBefore = 0.1
	minPassAfter  = 0.15
	passKey       = "env/demo-reverse/pass@1"
	maxWall       = 10 * time.Minute
	repoRoot      = "../.."
)

func TestDemo(t *testing.T) {
	out := t.TempDir()
	// The config names the model and environment relative to the
	// repository root, where the README runs it.
	t.Chdir(repoRoot)
	cfg, err := config.Load("examples/demo.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.ValidateEnvs(env.Check); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), maxWall)
	defer cancel()
	start := time.Now()
	res, err := trainer.New(cfg, trainer.WithOutput(out)).Run(ctx)
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("after %v: %v", wall.Round(time.Second), err)
	}
	if res.Steps != cfg.MaxSteps {
		t.Fatalf("ran %d steps, want %d", res.Steps, cfg.MaxSteps)
	}
	s, err := rundir.Summarize(out)
	if err != nil {
		t.Fatal(err)
	}
	gain := s.LastReward - s.FirstReward
	t.Logf("%d steps in %v: reward first 10%% %.3f, last 10%% %.3f, gain %+.3f; eval at step %d %.3f",
		s.Steps, wall.Round(time.Second), s.FirstReward, s.LastReward, gain, s.EvalStep, s.EvalReward)
	if wall > maxWall {
		t.Errorf("took %v, want at most %v", wall.Round(time.Second), maxWall)
	}
	if gain < minGain {
		t.Errorf("reward gain %.3f (first 10%% %.3f, last 10%% %.3f), want at least %.1f", gain, s.FirstReward, s.LastReward, minGain)
	}
	for _, f := range []string{"eval.jsonl", "rewards.png", "adapter"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	evals, err := rundir.ReadJSONL(filepath.Join(out, "eval.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(evals) < 2 {
		t.Fatalf("eval.jsonl has %d rows, want one at step 0 and one at the end", len(evals))
	}
	before, ok1 := evals[0][passKey].(float64)
	after, ok2 := evals[len(evals)-1][passKey].(float64)
	if !ok1 || !ok2 {
		t.Fatalf("eval.jsonl lacks %s in its first or last row: %v / %v", passKey, evals[0], evals[len(evals)-1])
	}
	t.Logf("eval pass@1 (exact reversals) %.3f -> %.3f", before, after)
	if before >= maxPassBefore || after < minPassAfter {
		t.Errorf("eval pass@1 %.3f at step 0 and %.3f at the end, want below %.2f and at least %.2f", before, after, maxPassBefore, minPassAfter)
	}
	if !s.HasEval || s.EvalStep != cfg.MaxSteps {
		t.Errorf("last eval at step %d (present: %v), want one at step %d", s.EvalStep, s.HasEval, cfg.MaxSteps)
	}
}
