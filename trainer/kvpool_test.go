package trainer

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/model"
)

// TestKVPoolFromFreeMemory: with free memory for about half of the step's
// rollouts' worst-case KV cache at once (beside the rest of the sampling
// phase), the trainer plans a bounded pool as grpo estimate does (from
// the assumed 256-token prompts: the estimate does not render them here),
// says so, and trains the step on that pool.
func TestKVPoolFromFreeMemory(t *testing.T) {
	dir := t.TempDir()
	path := writeRunFixture(t, dir, 1, 0)
	text, _ := os.ReadFile(path)
	cfg, err := config.Parse(text, path)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := model.LoadConfig(filepath.Join(dir, "model"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := estimate.Memory(cfg, mc, estimate.Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	kv := e.KV[0].Bytes()
	rest := e.PhaseBytes(estimate.PhaseSampling) - kv
	// The trainer adds the resident items back to what is free after loading.
	free := int64(float64(rest+kv/2) / 0.95)
	t.Setenv(estimate.FakeMemAvailableEnv, strconv.FormatInt(free, 10))
	var progress bytes.Buffer
	res, err := runConfig(t, path, WithOutput(filepath.Join(dir, "run")), WithProgress(&progress))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "KV cache: sampling") || !strings.Contains(progress.String(), "cut to the free memory") {
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
