package trainer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/estimate"
)

// TestKVPoolFromFreeMemory: with free memory for about half of the step's
// rollouts' worst-case KV cache at once (beside the rest of the sampling
// phase), the trainer plans a bounded pool as grpo estimate does (the
// envs' prompts rendered), says so, and trains the step on that pool,
// whose cap holds fewer than the step's 16 rollouts at once.
func TestKVPoolFromFreeMemory(t *testing.T) {
	dir := t.TempDir()
	path := writeRunFixture(t, dir, 1, 0)
	text, _ := os.ReadFile(path)
	cfg, err := config.Parse(text, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.ValidateEnvs(env.Check); err != nil {
		t.Fatal(err)
	}
	// What grpo estimate plans with the prompts rendered, before the fake
	// free memory is set.
	e, err := estimate.Run(context.Background(), cfg, estimate.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e.KV[0].Bounded {
		t.Fatalf("the unbounded plan is bounded already: %s", e.KV[0].Summary())
	}
	kv := e.KV[0].Bytes()
	rest := e.PhaseBytes(estimate.PhaseSampling) - kv
	// recompute = "auto" (the default) reads the free memory before the
	// weights load, so it holds the resident items too.
	free := int64(float64(e.PhaseBytes(estimate.PhaseResident)+rest+kv/2) / 0.95)
	t.Setenv(estimate.FakeMemAvailableEnv, strconv.FormatInt(free, 10))
	var progress bytes.Buffer
	res, err := runConfig(t, path, WithOutput(filepath.Join(dir, "run")), WithProgress(&progress))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "KV cache: sampling") || !strings.Contains(progress.String(), "cut to the free memory") ||
		strings.Contains(progress.String(), "16 of 16 rollouts") {
		t.Fatalf("no note of the bounded KV pool:\n%s", progress.String())
	}
	for _, l := range strings.Split(progress.String(), "\n") {
		if strings.Contains(l, "KV cache") {
			t.Log(l)
		}
	}
	if res.RunDir == "" {
		t.Error("no run directory")
	}
}
