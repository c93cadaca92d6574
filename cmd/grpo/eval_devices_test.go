package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestEvalDevicesReproducesOneDevice: grpo eval --devices cpu:0-2 (a copy
// of the model and a sampler on each of 3 cpu replicas, 5 examples split
// 1/2/2 in a pass) writes the rows one device does, in the same order:
// the same completions and rewards, greedy and sampled (every rollout
// draws its seed from its example's place in the whole call).
func TestEvalDevicesReproducesOneDevice(t *testing.T) {
	model := tinyModelDir(t)
	for _, temp := range []string{"0", "1"} {
		eval := func(name string, extra ...string) []resultRow {
			out := filepath.Join(t.TempDir(), name+".jsonl")
			var code int
			var stderr string
			withOSStderr(t, func() {
				code, _, stderr = runCLI(append([]string{"eval", "reverse-text", "-m", model, "-n", "5", "-r", "2", "--max-tokens", "5", "--temperature", temp,
					"--args", `{"num_eval_examples": 5, "dataset_name": "synthetic"}`, "--output", out}, extra...)...)
			})
			if code != 0 {
				t.Fatalf("temperature %s, %s: exit %d: %s", temp, name, code, stderr)
			}
			return readRows(t, out)
		}
		one, three := eval("one"), eval("three", "--devices", "cpu:0-2")
		if len(one) != 10 || len(three) != len(one) {
			t.Fatalf("temperature %s: %d and %d rows, want 10", temp, len(three), len(one))
		}
		for i := range one {
			a, _ := json.Marshal(one[i])
			b, _ := json.Marshal(three[i])
			if string(a) != string(b) {
				t.Errorf("temperature %s: row %d on 3 devices:\n%s\none device:\n%s", temp, i, b, a)
			}
		}
	}
}
