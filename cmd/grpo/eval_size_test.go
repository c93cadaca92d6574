package main

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/estimate"
)

// TestEvalRefusesWhatCannotFit: `grpo eval ENV -m M -n 1 -r 100000000`
// died with "fatal error: runtime: out of memory" in NewKVCache. Now the
// eval is sized first and refused in one line with the numbers and the
// settings to lower. (The free memory is pinned so the verdict does not
// depend on the machine.)
func TestEvalRefusesWhatCannotFit(t *testing.T) {
	// Results stream to the output file pass by pass, so memory holds one
	// pass; what cannot fit is the results file on the disk.
	t.Setenv(estimate.FakeMemAvailableEnv, "8G")
	t.Setenv(estimate.FakeDiskFreeEnv, "3G")
	model := tinyModelDir(t)
	code, _, stderr := runCLI("eval", "reverse-text", "-m", model, "-n", "1", "-r", "100000000", "--args", `{"dataset_name": "synthetic"}`)
	line := strings.TrimSpace(stderr)
	if code != 1 || strings.Contains(line, "\n") {
		t.Fatalf("exit %d, stderr %q; want exit 1 and one line", code, stderr)
	}
	for _, want := range []string{"eval reverse-text: 1 examples × 100000000 rollouts need an estimated", "of disk for their results", "3.0 GiB is free there", "lower rollouts_per_example (-r)"} {
		if !strings.Contains(line, want) {
			t.Errorf("refusal lacks %q: %s", want, line)
		}
	}
}

// TestEvalRefusesWhatCannotFitInMemory: one pass (its KV cache and the
// results it holds) larger than free memory is refused before any rollout.
func TestEvalRefusesWhatCannotFitInMemory(t *testing.T) {
	t.Setenv(estimate.FakeMemAvailableEnv, "1K")
	model := tinyModelDir(t)
	code, _, stderr := runCLI("eval", "reverse-text", "-m", model, "-n", "1", "-r", "8", "--args", `{"dataset_name": "synthetic"}`)
	line := strings.TrimSpace(stderr)
	if code != 1 || strings.Contains(line, "\n") {
		t.Fatalf("exit %d, stderr %q; want exit 1 and one line", code, stderr)
	}
	for _, want := range []string{"eval reverse-text: 1 examples × 8 rollouts need an estimated", "a KV cache for 8 rollouts at once", "1.0 KiB is free", "lower rollouts_per_example (-r)"} {
		if !strings.Contains(line, want) {
			t.Errorf("refusal lacks %q: %s", want, line)
		}
	}
}
