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
	t.Setenv(estimate.FakeMemAvailableEnv, "8G")
	model := tinyModelDir(t)
	code, _, stderr := runCLI("eval", "reverse-text", "-m", model, "-n", "1", "-r", "100000000")
	line := strings.TrimSpace(stderr)
	if code != 1 || strings.Contains(line, "\n") {
		t.Fatalf("exit %d, stderr %q; want exit 1 and one line", code, stderr)
	}
	for _, want := range []string{"eval reverse-text: 1 examples × 100000000 rollouts need an estimated", "8.0 GiB is free", "lower rollouts_per_example (-r)"} {
		if !strings.Contains(line, want) {
			t.Errorf("refusal lacks %q: %s", want, line)
		}
	}
}
