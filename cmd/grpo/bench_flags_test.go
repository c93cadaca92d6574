package main

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/bench"
)

// TestBenchGroupFlag: --group must divide --batch; the usage error names
// the flag, before any model loads.
func TestBenchGroupFlag(t *testing.T) {
	err := runBench(benchOpts{shape: "qwen3-30m", device: "emu", dtype: "auto", Options: bench.Options{Prefill: 4, Batch: 8, Group: 3, Repeat: 1, PrefillChunk: 64}})
	if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "--group 3") {
		t.Errorf("--group 3 of --batch 8: %v, want a usage error naming --group", err)
	}
}
