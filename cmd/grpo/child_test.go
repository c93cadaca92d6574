package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
)

// childArgsEnv makes the test binary run grpo with these arguments
// (separated by \x1f) instead of the tests, so a test can run the CLI as a
// real process: to signal it, or to run two at once.
const childArgsEnv = "GRPO_TEST_CLI_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(childArgsEnv); args != "" {
		os.Exit(runMain(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// grpoChild is the CLI with args as a child process; its stderr is
// collected in the returned buffer.
func grpoChild(args ...string) (*exec.Cmd, *bytes.Buffer) {
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\x1f"))
	var stderr bytes.Buffer
	c.Stderr = &stderr
	return c, &stderr
}

// startServe starts `grpo serve MODEL ARGS… --port 0` as a child, stopped
// when the test ends, and returns its URL and its stderr.
func startServe(t *testing.T, model string, args ...string) (string, *bytes.Buffer) {
	t.Helper()
	srv, srvErr := grpoChild(append([]string{"serve", model, "--port", "0"}, args...)...)
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Process.Signal(os.Interrupt)
		srv.Wait()
	})
	return serverURL(t, stdout, srvErr), srvErr
}

// tinyModelAndEnv writes the tiny Qwen3 model to dir/model and an
// 8-example reverse-words environment to dir/env in a fresh temporary
// dir, and returns the three paths.
func tinyModelAndEnv(t *testing.T) (dir, model, envDir string) {
	t.Helper()
	dir = t.TempDir()
	model = filepath.Join(dir, "model")
	if err := tinymodel.Write(model, filepath.Join("..", "..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	envDir = filepath.Join(dir, "env")
	if err := tinymodel.WriteReverseEnv(envDir, 8); err != nil {
		t.Fatal(err)
	}
	return dir, model, envDir
}

// parityConfig writes the tiny model and its 8-example reverse-words
// environment (tinyModelAndEnv) with the rubric replaced by the parity of
// the completion's length — the tiny model's completions share no letter
// with the answers, so the ratio rubric scores 0 — which gives the groups
// (4 rollouts each) mixed rewards, so each update has work to agree on;
// and a run config of batch rollouts a step and steps steps plus extra
// TOML. It returns the temporary dir and the config's path.
func parityConfig(t *testing.T, batch, steps int, extra string) (dir, cfg string) {
	t.Helper()
	dir, model, envDir := tinyModelAndEnv(t)
	envTOML := filepath.Join(envDir, "environment.toml")
	text, _ := os.ReadFile(envTOML)
	os.WriteFile(envTOML, []byte(strings.Replace(string(text), `type = "ratio"`, `type = "command"`+"\nargv = [\"sh\", \"-c\", \"wc -c | awk '{print ($1 % 2) / 2}'\"]", 1)), 0o644)
	cfg = filepath.Join(dir, "run.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("model = %q\nmax_steps = %d\nbatch_size = %d\nrollouts_per_example = 4\n[sampling]\nmax_tokens = 6\n[[env]]\nid = %q\n[lora]\nrank = 2\nalpha = 4\n[optimizer]\nlr = 1e-2\n[loss]\nfilter_zero_advantages = false\n%s",
		model, steps, batch, envDir, extra)), 0o644)
	return dir, cfg
}

// tinyTrainConfig writes a tiny model, a reverse-words environment and a
// run config of maxSteps steps with a checkpoint every ckInterval, and
// returns the config's path.
func tinyTrainConfig(t *testing.T, maxSteps, ckInterval int, extra string) string {
	t.Helper()
	dir, model, envDir := tinyModelAndEnv(t)
	cfg := filepath.Join(dir, "run.toml")
	text := fmt.Sprintf(`model = %q
max_steps = %d
batch_size = 4
rollouts_per_example = 2
seed = 3
%s
[sampling]
max_tokens = 4
[[env]]
id = %q
[lora]
rank = 2
alpha = 4
[checkpoint]
interval = %d
`, model, maxSteps, extra, envDir, ckInterval)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}
