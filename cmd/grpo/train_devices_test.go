package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model/safetensors"
	"github.com/grpo-dev/grpo/rundir"
)

// TestTrainDevicesReproducesOneDevice: grpo train --devices cpu:0-1 (two
// cpu replicas, data parallel, one gradient all-reduce a step) writes the
// metrics and adapter that one device does: rewards and token counts
// equal, loss and grad_norm within 1e-5 relative (the loss within 1e-5 of
// the advantages' std, the size of its nearly cancelling terms), the
// adapters within 1e-5 — the DP bar of trainer/replicas' tests, through
// the CLI.
func TestTrainDevicesReproducesOneDevice(t *testing.T) {
	dir, model, envDir := tinyModelAndEnv(t)
	// The tiny model's completions share no letter with the answers (the
	// ratio rubric scores 0): a reward of the rollout's size's parity
	// gives the groups mixed rewards, so the update has work to agree on.
	envTOML := filepath.Join(envDir, "environment.toml")
	text, _ := os.ReadFile(envTOML)
	os.WriteFile(envTOML, []byte(strings.Replace(string(text), `type = "ratio"`, `type = "command"`+"\nargv = [\"sh\", \"-c\", \"wc -c | awk '{print ($1 % 2) / 2}'\"]", 1)), 0o644)
	cfg := filepath.Join(dir, "run.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("model = %q\nmax_steps = 2\nbatch_size = 8\nrollouts_per_example = 4\n[sampling]\nmax_tokens = 6\n[[env]]\nid = %q\n[lora]\nrank = 2\nalpha = 4\n[optimizer]\nlr = 1e-2\n[loss]\nfilter_zero_advantages = false\n", model, envDir)), 0o644)
	train := func(name string, extra ...string) ([]map[string]any, map[string][]float32) {
		out := filepath.Join(dir, name)
		var code int
		var stderr string
		withOSStderr(t, func() {
			code, _, stderr = runCLI(append([]string{"train", cfg, "--output", out}, extra...)...)
		})
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		rows, err := rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl"))
		if err != nil || len(rows) != 2 {
			t.Fatalf("%s: %d metric rows, %v", name, len(rows), err)
		}
		f, err := safetensors.Open(filepath.Join(out, "adapter", "adapter_model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ad := map[string][]float32{}
		for _, n := range f.Names() {
			tn, _ := f.Tensor(n)
			if ad[n], err = tn.Float32s(); err != nil {
				t.Fatal(err)
			}
		}
		if name == "two" {
			log, _ := os.ReadFile(filepath.Join(out, "log.txt"))
			if !strings.Contains(string(log), "data parallel over 2 devices") {
				t.Errorf("log.txt does not say the run was data parallel over 2 devices")
			}
		}
		return rows, ad
	}
	oneRows, oneAd := train("one")
	twoRows, twoAd := train("two", "--devices", "cpu:0-1")
	for i := range oneRows {
		for _, key := range []string{"reward", "tokens/total", "loss", "grad_norm"} {
			w, ok := oneRows[i][key].(float64)
			g, _ := twoRows[i][key].(float64)
			tol := 1e-5 * math.Abs(w)
			switch key {
			case "reward", "tokens/total":
				tol = 0
			case "loss":
				adv, _ := oneRows[i]["advantage/std"].(float64)
				tol = 1e-5 * max(math.Abs(w), adv)
			}
			if !ok || math.IsNaN(g) || math.Abs(g-w) > tol {
				t.Errorf("step %d: %s %.9g on 2 devices, %.9g on one", i+1, key, g, w)
			}
		}
		if gn, _ := oneRows[i]["grad_norm"].(float64); !(gn > 0) {
			t.Errorf("step %d: grad_norm %v: nothing was trained to compare", i+1, gn)
		}
		t.Logf("step %d: loss %.9g vs %.9g, grad_norm %.9g vs %.9g", i+1, twoRows[i]["loss"], oneRows[i]["loss"], twoRows[i]["grad_norm"], oneRows[i]["grad_norm"])
	}
	worst := 0.0
	for n, w := range oneAd {
		g := twoAd[n]
		if len(g) != len(w) {
			t.Fatalf("adapter %s: %d values on 2 devices, %d on one", n, len(g), len(w))
		}
		for k := range w {
			worst = max(worst, math.Abs(float64(g[k]-w[k])))
		}
	}
	if worst > 1e-5 || len(oneAd) != len(twoAd) {
		t.Errorf("adapters differ by up to %.3g (bound 1e-5); %d and %d tensors", worst, len(twoAd), len(oneAd))
	}
	t.Logf("adapters within %.3g", worst)
}
