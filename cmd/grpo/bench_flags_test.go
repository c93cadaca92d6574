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

// TestBenchDevices: grpo bench --devices cpu:0-1 measures each device in
// turn and prints one table with a DEVICE column: every figure once per
// device, device 0's rows first.
func TestBenchDevices(t *testing.T) {
	code, out, errOut := runCaptured(t, "bench", "--model", tinyModelDir(t), "--devices", "cpu:0-1", "--prefill", "4", "--batch", "2", "--decode", "2",
		"--repeat", "1", "--train-seqs", "0", "--no-matmul")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if f := strings.Fields(lines[0]); len(f) != 4 || f[0] != "DEVICE" || f[1] != "FIGURE" {
		t.Fatalf("header %q, want DEVICE FIGURE VALUE UNIT:\n%s", lines[0], out)
	}
	perDevice := map[string][]string{}
	var order []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 4 {
			t.Fatalf("row %q:\n%s", l, out)
		}
		if len(order) == 0 || order[len(order)-1] != f[0] {
			order = append(order, f[0])
		}
		perDevice[f[0]] = append(perDevice[f[0]], f[1])
	}
	if strings.Join(order, " ") != "cpu cpu:1" || len(perDevice["cpu"]) == 0 || strings.Join(perDevice["cpu"], " ") != strings.Join(perDevice["cpu:1"], " ") {
		t.Errorf("devices in order %v, figures %v; want cpu then cpu:1, the same figures each:\n%s", order, perDevice, out)
	}
}
