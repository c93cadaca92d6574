package trainer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/rundir"
)

// writeRunFixture lays out a tiny model, a reverse-words environment and a
// config in dir, and returns the config's path.
func writeRunFixture(t *testing.T, dir string, maxSteps, ckInterval int) string {
	t.Helper()
	if err := tinymodel.Write(filepath.Join(dir, "model"), filepath.Join("..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	if err := tinymodel.WriteReverseEnv(filepath.Join(dir, "env"), 24); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`model = %q
max_steps = %d
batch_size = 16
rollouts_per_example = 4
seed = 7

[sampling]
max_tokens = 6

[[env]]
id = %q

[lora]
rank = 4
alpha = 8

[optimizer]
lr = 1e-2

[checkpoint]
interval = %d
keep_last = 2
`, filepath.Join(dir, "model"), maxSteps, filepath.Join(dir, "env"), ckInterval)
	path := filepath.Join(dir, "run.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runConfig(t *testing.T, path string, opts ...Option) (*Result, error) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(text, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.ValidateEnvs(env.Check); err != nil {
		t.Fatal(err)
	}
	return New(cfg, append(opts, WithConfigText(text))...).Run(context.Background())
}

// deterministicMetrics drops the wall-clock fields of metrics.jsonl.
func deterministicMetrics(t *testing.T, runDir string) []map[string]any {
	rows, err := rundir.ReadJSONL(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		for k := range r {
			if strings.HasPrefix(k, "time/") || k == "tokens_per_s" {
				delete(r, k)
			}
		}
	}
	return rows
}

// TestMain lets the test binary act as a training process that the
// SIGKILL test can kill.
func TestMain(m *testing.M) {
	if cfg := os.Getenv("GRPO_TEST_TRAIN_CHILD"); cfg != "" {
		text, _ := os.ReadFile(cfg)
		c, err := config.Parse(text, cfg)
		if err == nil {
			_, err = New(c, WithOutput(os.Getenv("GRPO_TEST_TRAIN_OUT")), WithConfigText(text)).Run(context.Background())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestKillAndResumeIsBitExact: a run killed with SIGKILL mid-training and
// resumed from its last checkpoint ends with the same metrics, step for
// step, as a run that was never interrupted (wall-clock fields aside).
func TestKillAndResumeIsBitExact(t *testing.T) {
	if testing.Short() {
		t.Skip("trains twice")
	}
	dir := t.TempDir()
	const steps = 12
	cfg := writeRunFixture(t, dir, steps, 4)
	ref := filepath.Join(dir, "uninterrupted")
	if _, err := runConfig(t, cfg, WithOutput(ref)); err != nil {
		t.Fatal(err)
	}
	want := deterministicMetrics(t, ref)
	if len(want) != steps {
		t.Fatalf("uninterrupted run logged %d steps, want %d", len(want), steps)
	}

	// Kill it once it is past the step-4 checkpoint and into step 7.
	killed := filepath.Join(dir, "killed")
	killAndResume(t, cfg, killed, steps, 6)
	got := deterministicMetrics(t, killed)
	if len(got) != steps {
		t.Fatalf("resumed run logged %d steps, want %d", len(got), steps)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("step %d differs after resume:\n got %v\nwant %v", i+1, got[i], want[i])
		}
	}
	// The final adapters are identical too.
	a, _ := os.ReadFile(filepath.Join(ref, "adapter", "adapter_model.safetensors"))
	b, _ := os.ReadFile(filepath.Join(killed, "adapter", "adapter_model.safetensors"))
	if len(a) == 0 || string(a) != string(b) {
		t.Error("final adapters differ between the resumed and the uninterrupted run")
	}
}

// killAndResume runs cfg in a child process, kills it with SIGKILL once
// it has logged killAfter steps (before the last of steps), and resumes
// it in out to the end.
func killAndResume(t *testing.T, cfg, out string, steps, killAfter int) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "GRPO_TEST_TRAIN_CHILD="+cfg, "GRPO_TEST_TRAIN_OUT="+out)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		rows, _ := rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl"))
		if len(rows) >= killAfter {
			break
		}
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatalf("the child run did not reach step %d in 60 s", killAfter)
		}
		time.Sleep(2 * time.Millisecond)
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	rows, _ := rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl"))
	if len(rows) >= steps {
		t.Fatalf("the child finished (%d steps) before it was killed; the test proves nothing", len(rows))
	}
	t.Logf("killed after %d logged steps", len(rows))
	if _, err := runConfig(t, cfg, WithResume(out)); err != nil {
		t.Fatal(err)
	}
}

// TestInterruptCheckpointsAndResumes: cancelling the context (what Ctrl-C
// does in grpo train) ends Run with ErrInterrupted after writing a
// checkpoint of the last finished step; --resume then finishes the run.
func TestInterruptCheckpointsAndResumes(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeRunFixture(t, dir, 6, 0) // no periodic checkpoints
	text, _ := os.ReadFile(cfgPath)
	cfg, err := config.Parse(text, cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	ctx, cancel := context.WithCancel(context.Background())
	_, err = New(cfg, WithOutput(out), WithConfigText(text), WithStepCallback(func(s StepResult) {
		if s.Step == 3 {
			cancel()
		}
	})).Run(ctx)
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "--resume "+out) {
		t.Fatalf("want ErrInterrupted naming the resume command, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "checkpoints", "step-3", "adapter", "adapter_model.safetensors")); err != nil {
		t.Fatalf("no checkpoint of step 3: %v", err)
	}
	res, err := runConfig(t, cfgPath, WithResume(out))
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 6 {
		t.Errorf("resumed run ended at step %d, want 6", res.Steps)
	}
	if rows := deterministicMetrics(t, out); len(rows) != 6 {
		t.Errorf("metrics.jsonl has %d steps, want 6", len(rows))
	}
}
