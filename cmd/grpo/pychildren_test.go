package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// spawnerEnv is a verifiers environment that starts a server-like child
// (and its child) when it loads, and whose reward blocks, so that an eval
// of it is still running when the test kills grpo.
const spawnerEnv = `import subprocess
import time

import verifiers as vf


def slow(**kwargs):
    time.sleep(1000)
    return 0.0


def load_environment():
    subprocess.Popen(["sh", "-c", "sleep 1000 & exec sleep 1000"])
    rows = [{"question": "Say something.", "answer": ""}]
    return vf.SingleTurnEnv(dataset=rows, eval_dataset=rows, rubric=vf.Rubric(funcs=[slow]))
`

// markedProcs lists the processes whose environment holds marker.
func markedProcs(marker string) []string {
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, _ := os.ReadFile(d + "/environ")
		if bytes.Contains(env, []byte(marker)) {
			cmd, _ := os.ReadFile(d + "/cmdline")
			cmd = bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})
			found = append(found, filepath.Base(d)+" "+string(cmd[:min(len(cmd), 40)]))
		}
	}
	return found
}

// Issue 27's bar: after SIGKILL of grpo eval with a Python environment
// that starts children, no process of the run is left; nor after Ctrl-C
// (SIGINT to grpo alone: the child's process group is its own, so the
// terminal's SIGINT does not reach it).
func TestEvalKillLeavesNoPythonProcess(t *testing.T) {
	for _, sig := range []os.Signal{os.Kill, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) { evalKilled(t, sig) })
	}
}

func evalKilled(t *testing.T, sig os.Signal) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on PATH: Python environments run in python")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spawner.py"), []byte(spawnerEnv), 0o644); err != nil {
		t.Fatal(err)
	}
	stub, _ := filepath.Abs(filepath.Join("..", "..", "env", "pybridge", "testdata", "vfstub"))
	marker := fmt.Sprintf("grpo-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	c, stderr := grpoChild("eval", filepath.Join(dir, "spawner.py"), "-m", tinyModelDir(t), "-n", "1", "-r", "1", "--max-tokens", "2")
	c.Env = append(c.Env, "PYTHONPATH="+stub, "GRPO_PYTHON=", "GRPO_HOME="+t.TempDir(), "GRPO_TEST_MARKER="+marker)
	c.Dir = dir // where grpo eval writes its results file
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	// The environment has loaded once both sleeps run (sh's and the
	// exec'd one).
	sleeps := func() int { return strings.Count(strings.Join(markedProcs(marker), "\n"), "sleep 1000") }
	deadline := time.Now().Add(60 * time.Second)
	for sleeps() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the environment's children did not start in 60s: %v\n%s", markedProcs(marker), stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("before %v: %s", sig, strings.Join(markedProcs(marker), "; "))
	c.Process.Signal(sig)
	exited := make(chan struct{})
	go func() { c.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("grpo eval did not exit in 30s after %v", sig)
	}
	start := time.Now()
	for left := markedProcs(marker); len(left) > 0; left = markedProcs(marker) {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("%d processes of the run are left 5s after %v of grpo eval:\n%s", len(left), sig, strings.Join(left, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the last process of the run was gone %v after grpo exited of %v", time.Since(start).Round(time.Millisecond), sig)
}
