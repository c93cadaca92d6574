package trainer

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/rundir"
)

// Issue 28 item 2's bar: a verifiers v1 taskset and a v0 environment
// (stand-ins written from verifiers a60a606's API, run by the bridge in
// python3 with the verifiers stand-in) each train one step through the
// bridge: v1_reverse (single-turn, the null harness in-process),
// v1_codeword (multi-turn, its Env's run), v1_agent (its Harness's agent
// program driving the model through the interception endpoint) and
// legacy_env (v0: setup_state's
// new State, cleanup, a RubricGroup with a group reward function scored
// a group at a time).
func TestTrainsOneStepThroughPythonBridge(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on PATH: Python environments run in python")
	}
	testdata, _ := filepath.Abs(filepath.Join("..", "env", "pybridge", "testdata"))
	t.Setenv("PYTHONPATH", filepath.Join(testdata, "vfstub"))
	t.Setenv("GRPO_PYTHON", "")
	t.Setenv("GRPO_HOME", t.TempDir())
	model := filepath.Join(t.TempDir(), "model")
	if err := tinymodel.Write(model, filepath.Join("..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "cleanup.log")
	for _, c := range []struct{ module, args, metric string }{
		{"v1_reverse", `{ n = 4 }`, "lcs"},
		{"v1_codeword", `{}`, "exact"},
		{"legacy_env", fmt.Sprintf(`{ log = %q }`, log), "unique"},
		// v1 with its own agent harness: a program whose model calls go
		// through the interception endpoint (rollout's agent episodes).
		{"v1_agent", `{}`, "answered"},
	} {
		t.Run(c.module, func(t *testing.T) {
			dir := t.TempDir()
			cfg := fmt.Sprintf(`model = %q
max_steps = 1
batch_size = 4
rollouts_per_example = 2
seed = 3

[sampling]
max_tokens = 4

[[env]]
id = %q
args = %s

[lora]
rank = 2
alpha = 4
`, model, filepath.Join(testdata, "envs", c.module+".py"), c.args)
			path := filepath.Join(dir, "run.toml")
			os.WriteFile(path, []byte(cfg), 0o644)
			out := filepath.Join(dir, "run")
			if _, err := runConfig(t, path, WithOutput(out)); err != nil {
				t.Fatal(err)
			}
			rows, err := rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl"))
			if err != nil || len(rows) != 1 {
				t.Fatalf("%d metric rows, %v", len(rows), err)
			}
			var keys []string
			for k := range rows[0] {
				if strings.Contains(k, c.metric) {
					keys = append(keys, k)
				}
			}
			if len(keys) == 0 {
				t.Errorf("step 1's metrics have none of the environment's %s: %v", c.metric, rows[0])
			}
			for k, v := range rows[0] {
				if n, _ := v.(float64); strings.HasSuffix(k, "errors") && n > 0 {
					t.Errorf("%s = %v: rollouts failed: %v", k, n, rows[0])
				}
			}
			// Each of the 4 programs called the model once, its one sample.
			if calls, _ := rows[0]["agent/calls"].(float64); c.module == "v1_agent" && calls != 1 {
				t.Errorf("agent/calls = %v per rollout, want 1: %v", rows[0]["agent/calls"], rows[0])
			}
		})
	}
	if got, _ := os.ReadFile(log); strings.Count(string(got), "cleanup") != 4 {
		t.Errorf("legacy_env's cleanup ran for %d of 4 rollouts:\n%s", strings.Count(string(got), "cleanup"), got)
	}
}
