package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/rundir"
)

// waitForStep waits until the run in dir has logged a step.
func waitForStep(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if rows, _ := rundir.ReadJSONL(filepath.Join(dir, "metrics.jsonl")); len(rows) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run in %s logged no step in 60 s", dir)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestTrainSignalExitCodes: Ctrl-C (SIGINT) and SIGTERM both checkpoint
// the last finished step and exit 128 + the signal (130, 143), so
// `grpo train … && grpo merge …` does not go on.
func TestTrainSignalExitCodes(t *testing.T) {
	cfg := tinyTrainConfig(t, 100000, 0, "")
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		out := filepath.Join(t.TempDir(), "run")
		child, stderr := grpoChild("train", cfg, "--output", out)
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		waitForStep(t, out)
		child.Process.Signal(sig)
		code := exitCode(child.Wait())
		if code != want || !strings.Contains(stderr.String(), "resume with 'grpo train --resume "+out+"'") {
			t.Errorf("%v: exit %d, want %d; stderr:\n%s", sig, code, want, stderr)
		}
		if steps, _ := rundir.Checkpoints(filepath.Join(out, "checkpoints")); len(steps) != 1 {
			t.Errorf("%v: checkpoints %v, want the last finished step's", sig, steps)
		}
	}
}

// withoutCoreTypeWarning drops the line a child prints when the machine
// forces OPENBLAS_CORETYPE below its CPU (cpureport.go): a true statement
// about the environment, which tests must leave as it is, not part of the
// one-line error a test holds the CLI to.
func withoutCoreTypeWarning(stderr string) string {
	var keep []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if !strings.HasPrefix(l, "warning: OPENBLAS_CORETYPE=") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// TestTrainTwoWritersAtOnce: `grpo train a.toml --output d & grpo train
// b.toml --output d` — one run writes d; the other exits 1 at once with
// one line naming the holder (or, had the first already finished, saying
// d holds a run). d ends with the winner's steps only.
func TestTrainTwoWritersAtOnce(t *testing.T) {
	a := tinyTrainConfig(t, 3, 0, "")
	b := tinyTrainConfig(t, 3, 0, "")
	b2, _ := os.ReadFile(b)
	os.WriteFile(b, []byte(strings.Replace(string(b2), "seed = 3", "seed = 4", 1)), 0o644)
	out := filepath.Join(t.TempDir(), "d")
	ca, ea := grpoChild("train", a, "--output", out)
	cb, eb := grpoChild("train", b, "--output", out)
	if err := ca.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cb.Start(); err != nil {
		t.Fatal(err)
	}
	codes := []int{exitCode(ca.Wait()), exitCode(cb.Wait())}
	stderrs := []string{ea.String(), eb.String()}
	wins := 0
	for i, code := range codes {
		if code == 0 {
			wins++
			continue
		}
		line := strings.TrimSpace(withoutCoreTypeWarning(stderrs[i]))
		if code != 1 || strings.Contains(line, "\n") || !(strings.Contains(line, "is in use by grpo process") || strings.Contains(line, "already holds a run")) {
			t.Errorf("writer %d: exit %d, stderr %q; want exit 1 and one line naming the holder", i, code, line)
		}
	}
	if wins != 1 {
		t.Fatalf("%d writers succeeded, want 1; stderr: %q", wins, stderrs)
	}
	if rows, _ := rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl")); len(rows) != 3 {
		t.Errorf("metrics.jsonl has %d lines, want the winner's 3", len(rows))
	}
}

// TestTrainResumeMissingDir: --resume of a directory that does not exist
// says so and how to find a run, not "config: open …/config.toml".
func TestTrainResumeMissingDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	code, _, stderr := runCLI("train", "--resume", missing)
	if code != 1 || !strings.Contains(stderr, missing+": no such run directory") || !strings.Contains(stderr, "grpo runs list") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
