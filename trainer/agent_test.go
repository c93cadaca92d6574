package trainer

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
)

// TestAgentProgramTrainsOneStep: the scripted agent program (a call, a
// call extending it, a call rewriting the history, then its answer on
// standard output) plays a custom environment's [agent] through the
// interception endpoint, and one step trains every sample of every
// rollout: the tokens trained are exactly the completions of all the
// program's calls, as the endpoint reported them to the program — more
// than the last sample of each rollout holds.
func TestAgentProgramTrainsOneStep(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the scripted agent needs it")
	}
	dir := t.TempDir()
	if err := tinymodel.Write(filepath.Join(dir, "model"), filepath.Join("..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("..", "testdata", "agents", "scripted_agent.py"))
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "calls.jsonl")
	envDir := filepath.Join(dir, "env")
	var rows strings.Builder
	for i := range 4 {
		fmt.Fprintf(&rows, "{\"question\": \"pick %d\", \"answer\": \"1\"}\n", i)
	}
	write(t, filepath.Join(envDir, "train.jsonl"), rows.String())
	write(t, filepath.Join(envDir, "environment.toml"), fmt.Sprintf(`id = "test-agent"
prompt_template = "{question}"

[dataset]
train = "train.jsonl"

[[rubric]]
type = "exact"

[agent]
command = ["python3", %q]
timeout = "2m"
prompt_tokens = 64
env = { AGENT_LOG = %q }
`, script, log))
	cfg := filepath.Join(dir, "run.toml")
	write(t, cfg, fmt.Sprintf(`model = %q
max_steps = 1
batch_size = 8
rollouts_per_example = 4
seed = 7

[sampling]
max_tokens = 6

[[env]]
id = %q

[lora]
rank = 4
alpha = 8

[loss]
filter_zero_advantages = false
`, filepath.Join(dir, "model"), envDir))
	var trained float64
	res, err := runConfig(t, cfg, WithOutput(filepath.Join(dir, "run")), WithStepCallback(func(s StepResult) { trained = s.Metrics["tokens/trained"] }))
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || trained == 0 {
		t.Fatalf("result %v, %v tokens trained", res, trained)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 8*3 {
		t.Fatalf("%d calls logged, want 3 for each of 8 rollouts", len(lines))
	}
	completions, last := 0, 0
	for i, l := range lines {
		var u struct {
			CompletionTokens int `json:"completion_tokens"`
		}
		if err := json.Unmarshal([]byte(l), &u); err != nil {
			t.Fatal(err)
		}
		completions += u.CompletionTokens
		if i%3 == 2 {
			last += u.CompletionTokens
		}
	}
	if int(trained) != completions {
		t.Errorf("%v tokens trained, want the %d of the program's calls' completions", trained, completions)
	}
	if completions <= last {
		t.Fatalf("the calls' completions (%d tokens) are no more than the rewritten calls' (%d): the test cannot tell", completions, last)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
