package builtins_test

import (
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
)

// TestV1GamesGolden: testdata/verifiers_v1_games_golden.jsonl (verifiers
// a60a606's own code on each case, see its script) holds at least 15 v1
// cases per environment, and each wordle game's secret is the one grpo's
// seeded stream gives its seed, as the taskset's.
func TestV1GamesGolden(t *testing.T) {
	perEnv := map[string]int{}
	for _, c := range loadGoldenFile(t, "../testdata/verifiers_v1_games_golden.jsonl") {
		if c.Version != "v1" || c.Source != "ran" {
			t.Errorf("%s/%s: version %q source %q, want v1, ran", c.Env, c.Name, c.Version, c.Source)
		}
		perEnv[c.Env]++
		if c.Env != "wordle" {
			continue
		}
		seed, ok := c.Info["seed"].(float64)
		if !ok {
			t.Fatalf("%s: info %v has no seed", c.Name, c.Info)
		}
		exs, err := envtest.NewEnv(t, "wordle", map[string]any{"seed": int(seed), "num_train_examples": 1}, env.WithVersion("v1")).Examples("train")
		if err != nil || exs[0].Answer != c.Answer {
			t.Errorf("%s: game seeded %v has secret %+v (%v), verifiers %q", c.Name, seed, exs, err, c.Answer)
		}
	}
	for _, id := range []string{"wordle"} {
		if perEnv[id] < 15 {
			t.Errorf("%s has %d v1 golden cases, want at least 15", id, perEnv[id])
		}
	}
}
