package trainer

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/rundir"
)

// startTrainChild runs cfg into out in a child process (TestMain) and
// returns once the child has logged a step, so it holds the run directory.
func startTrainChild(t *testing.T, cfg, out string) *exec.Cmd {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "GRPO_TEST_TRAIN_CHILD="+cfg, "GRPO_TEST_TRAIN_OUT="+out)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if rows, _ := rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl")); len(rows) > 0 {
			return child
		}
		if time.Now().After(deadline) {
			t.Fatal("the child run logged no step in 60 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunDirHasOneWriter: while a run is alive, a second run into its
// directory and a resume of it are both refused in one line naming the
// live process's PID; once that process is killed (its flock goes with
// it, the lock file and the dead PID stay), the resume goes ahead.
func TestRunDirHasOneWriter(t *testing.T) {
	dir := t.TempDir()
	cfg := writeRunFixture(t, dir, 100000, 0) // runs until killed, no checkpoint
	out := filepath.Join(dir, "run")
	child := startTrainChild(t, cfg, out)
	pid := fmt.Sprintf("grpo process %d", child.Process.Pid)
	for name, opt := range map[string]Option{"second run": WithOutput(out), "resume": WithResume(out)} {
		_, err := runConfig(t, cfg, opt)
		var busy *rundir.BusyError
		if !errors.As(err, &busy) || !strings.Contains(err.Error(), pid) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s while the run is alive: want one line naming %s, got %v", name, pid, err)
		}
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()

	short := writeRunFixture(t, filepath.Join(dir, "short"), 2, 0)
	text, _ := os.ReadFile(short)
	os.WriteFile(filepath.Join(out, "config.toml"), text, 0o644) // finish it in 2 steps
	res, err := runConfig(t, filepath.Join(out, "config.toml"), WithResume(out))
	if err != nil {
		t.Fatalf("resume after the holder died: %v", err)
	}
	if res.Steps != 2 {
		t.Errorf("resumed run ended at step %d, want 2", res.Steps)
	}
}
