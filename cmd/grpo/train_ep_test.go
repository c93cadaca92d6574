package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
)

// TestTrainExpertParallel: grpo train of the tiny Qwen3-MoE with
// devices = ["cpu:0-1"] and expert_parallel = 2 passes grpo estimate's
// guard (the same plan, forced to EP 2), runs expert parallel (the log
// says so) and writes one device's metrics and adapter: rewards and
// token counts equal, grad_norm within 1e-5 relative, the adapters
// within 1e-5 (the trainer's EP tests hold the same bar over 3 steps and
// resumes).
func TestTrainExpertParallel(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model")
	if err := tinymodel.Write(model, filepath.Join("..", "..", "testdata", "models", "qwen3-moe-tiny")); err != nil {
		t.Fatal(err)
	}
	envDir := filepath.Join(dir, "env")
	if err := tinymodel.WriteReverseEnv(envDir, 8); err != nil {
		t.Fatal(err)
	}
	// A reward of the completion's size's parity gives the groups mixed
	// rewards (as TestTrainDevicesReproducesOneDevice's env does).
	envTOML := filepath.Join(envDir, "environment.toml")
	text, _ := os.ReadFile(envTOML)
	os.WriteFile(envTOML, []byte(strings.Replace(string(text), `type = "ratio"`, `type = "command"`+"\nargv = [\"sh\", \"-c\", \"wc -c | awk '{print ($1 % 2) / 2}'\"]", 1)), 0o644)
	doc := fmt.Sprintf("model = %q\nmax_steps = 2\nbatch_size = 8\nrollouts_per_example = 4\n[sampling]\nmax_tokens = 6\n[[env]]\nid = %q\n[lora]\nrank = 2\nalpha = 4\ntarget_modules = [\"q_proj\", \"v_proj\", \"gate_proj\", \"up_proj\", \"down_proj\"]\n[optimizer]\nlr = 5e-3\n[loss]\nfilter_zero_advantages = false\n", model, envDir)
	train := func(name, header string) ([]map[string]any, map[string][]float32) {
		cfg, out := filepath.Join(dir, name+".toml"), filepath.Join(dir, name)
		os.WriteFile(cfg, []byte(header+doc), 0o644)
		var code int
		var stderr string
		withOSStderr(t, func() { code, _, stderr = runCLI("train", cfg, "--output", out) })
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		rows, ad := readRun(t, out)
		if len(rows) != 2 {
			t.Fatalf("%s: %d metric rows", name, len(rows))
		}
		return rows, ad
	}
	oneRows, oneAd := train("one", "")
	twoRows, twoAd := train("two", "devices = [\"cpu:0-1\"]\nexpert_parallel = 2\n")
	if log, _ := os.ReadFile(filepath.Join(dir, "two", "log.txt")); !strings.Contains(string(log), "layout: expert parallel over 2 devices, EP 2 × DP 1") {
		t.Errorf("log.txt does not say the run was expert parallel over 2 devices")
	}
	for i := range oneRows {
		for _, key := range []string{"reward", "tokens/total", "grad_norm"} {
			w, ok := oneRows[i][key].(float64)
			g, _ := twoRows[i][key].(float64)
			tol := 1e-5 * math.Abs(w)
			if key != "grad_norm" {
				tol = 0
			}
			if !ok || math.IsNaN(g) || math.Abs(g-w) > tol {
				t.Errorf("step %d: %s %.9g under EP 2, %.9g on one device", i+1, key, g, w)
			}
		}
	}
	worst := 0.0
	for n, w := range oneAd {
		g := twoAd[n]
		if len(g) != len(w) {
			t.Fatalf("adapter %s: %d values under EP 2, %d on one device", n, len(g), len(w))
		}
		for k := range w {
			worst = max(worst, math.Abs(float64(g[k]-w[k])))
		}
	}
	if worst > 1e-5 || len(oneAd) != len(twoAd) {
		t.Errorf("adapters differ by up to %.3g (bound 1e-5); %d and %d tensors", worst, len(twoAd), len(oneAd))
	}
	t.Logf("adapters within %.3g; grad_norm %v vs %v", worst, twoRows[1]["grad_norm"], oneRows[1]["grad_norm"])
}
