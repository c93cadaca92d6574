package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainDevicesReproducesOneDevice: grpo train --devices cpu:0-1 (two
// cpu replicas, data parallel, one gradient all-reduce a step) writes the
// metrics and adapter that one device does: rewards and token counts
// equal, loss and grad_norm within 1e-5 relative (the loss within 1e-5 of
// the advantages' std, the size of its nearly cancelling terms), the
// adapters within runAdapterBound — the DP bar of trainer/replicas' tests, through
// the CLI.
func TestTrainDevicesReproducesOneDevice(t *testing.T) {
	dir, cfg := parityConfig(t, 8, 2, "")
	train := func(name string, extra ...string) string {
		out := filepath.Join(dir, name)
		var code int
		var stderr string
		withOSStderr(t, func() {
			code, _, stderr = runCLI(append([]string{"train", cfg, "--output", out}, extra...)...)
		})
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		return out
	}
	one, two := train("one"), train("two", "--devices", "cpu:0-1")
	if log, _ := os.ReadFile(filepath.Join(two, "log.txt")); !strings.Contains(string(log), "data parallel over 2 devices") {
		t.Errorf("log.txt does not say the run was data parallel over 2 devices")
	}
	compareRuns(t, one, two, 2)
}
