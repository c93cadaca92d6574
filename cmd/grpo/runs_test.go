package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/rundir"
)

// trainTinyRun trains a real 2-step run into root/NAME with grpo train.
func trainTinyRun(t *testing.T, root, name string) string {
	t.Helper()
	dir, model, envDir := tinyModelAndEnv(t)
	cfg := filepath.Join(dir, "run.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`model = %q
max_steps = 2
batch_size = 4
rollouts_per_example = 2
[sampling]
max_tokens = 4
[[env]]
id = %q
[eval]
interval = 1
num_examples = 2
[lora]
rank = 2
alpha = 4
[checkpoint]
interval = 1
`, model, envDir)), 0o644)
	run := filepath.Join(root, name)
	var code int
	var stderr string
	withOSStderr(t, func() { code, _, stderr = runCLI("train", cfg, "--output", run) })
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	return run
}

func TestRunsListAndStatus(t *testing.T) {
	root := filepath.Join(t.TempDir(), "runs")
	run := trainTinyRun(t, root, "tiny")
	// A second run that was interrupted long ago.
	old := filepath.Join(root, "old")
	os.MkdirAll(old, 0o755)
	os.WriteFile(filepath.Join(old, "log.txt"), []byte("2025-01-01 10:00:00 interrupted after step 0; resume with x\n"), 0o644)
	then := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(old, "log.txt"), then, then)

	rows, _ := rundir.ReadJSONL(filepath.Join(run, "metrics.jsonl"))
	evals, _ := rundir.ReadJSONL(filepath.Join(run, "eval.jsonl"))
	if len(rows) != 2 || len(evals) == 0 {
		t.Fatalf("run wrote %d steps, %d evals", len(rows), len(evals))
	}
	// The random tiny model earns reward 0; give the last step distinctive
	// numbers so the printed ones can only come from that row.
	rows[1]["reward"], rows[1]["loss"] = 0.4321, -0.01234
	rd := &rundir.Dir{Path: run}
	os.Remove(filepath.Join(run, "metrics.jsonl"))
	for _, r := range rows {
		if err := rd.AppendJSONL("metrics.jsonl", r); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr := runCLI("runs", "list", "--dir", root)
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, stderr)
	}
	reward := strconv.FormatFloat(rows[1]["reward"].(float64), 'f', 4, 64)
	evalReward := strconv.FormatFloat(evals[len(evals)-1]["reward"].(float64), 'f', 4, 64)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "tiny") || !strings.HasPrefix(lines[2], "old") {
		t.Fatalf("list:\n%s", out)
	}
	for _, want := range []string{"2/2", reward, evalReward + " (step 2)", "finished"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("list row lacks %q: %s", want, lines[1])
		}
	}
	if !strings.Contains(lines[2], "interrupted") {
		t.Errorf("old row: %s", lines[2])
	}

	code, out, stderr = runCLI("runs", "status", "tiny", "--dir", root)
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	loss := strconv.FormatFloat(rows[1]["loss"].(float64), 'g', 4, 64)
	if !regexp.MustCompile(`steps\s+2 of 2`).MatchString(out) || !regexp.MustCompile(`reward, last 10% of steps\s+0\.4321`).MatchString(out) {
		t.Errorf("status steps or last reward:\n%s", out)
	}
	for _, want := range []string{"finished", "loss " + loss,
		"checkpoints", "steps 1, 2", filepath.Join(run, "adapter"), filepath.Join(run, "rewards.png"), "rank 2, alpha 4"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI("runs", "logs", run)
	if code != 0 || !strings.Contains(out, "step 2 reward") || !strings.Contains(out, "finished 2 steps") {
		t.Errorf("logs: exit %d\n%s", code, out)
	}
	// Following a finished run prints its log and returns at once.
	start := time.Now()
	code, out, _ = runCLI("runs", "logs", run, "--follow")
	if code != 0 || !strings.Contains(out, "finished 2 steps") || time.Since(start) > 5*time.Second {
		t.Errorf("logs --follow of a finished run: exit %d after %s\n%s", code, time.Since(start), out)
	}
}

// TestRunsLogsFollow follows a run whose log grows while it is followed.
func TestRunsLogsFollow(t *testing.T) {
	run := filepath.Join(t.TempDir(), "live")
	os.MkdirAll(run, 0o755)
	log := filepath.Join(run, "log.txt")
	os.WriteFile(log, []byte("2025-01-02 03:04:05 model m on cpu\n"), 0o644)
	go func() {
		for i := 1; i <= 3; i++ {
			time.Sleep(30 * time.Millisecond)
			f, _ := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0o644)
			fmt.Fprintf(f, "2025-01-02 03:04:0%d step %d reward 0.%d\n", 5+i, i, i)
			f.Close()
		}
		time.Sleep(30 * time.Millisecond)
		f, _ := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0o644)
		fmt.Fprintln(f, "2025-01-02 03:04:09 error: step 4: out of memory")
		f.Close()
	}()
	done := make(chan struct{})
	var code int
	var out string
	go func() {
		code, out, _ = runCLI("runs", "logs", run, "--follow", "--poll", "10ms")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("--follow did not stop when the run failed")
	}
	want := []string{"model m", "step 1", "step 2", "step 3", "error: step 4"}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != len(want) {
		t.Fatalf("exit %d, %d lines:\n%s", code, len(lines), out)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d = %q, want %q", i, lines[i], w)
		}
	}
}

func TestRunsBadInput(t *testing.T) {
	root := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"runs"}, "needs a subcommand"},
		{[]string{"runs", "frob"}, `unknown runs subcommand "frob"`},
		{[]string{"runs", "status"}, "takes one run"},
		{[]string{"runs", "status", "nope", "--dir", root}, `run "nope" not found`},
		{[]string{"runs", "logs", "nope", "--dir", root}, "start one with grpo train"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", c.args, code, stderr, c.want)
		}
	}
	code, out, _ := runCLI("runs", "list", "--dir", filepath.Join(root, "missing"))
	if code != 0 || !strings.Contains(out, "no runs in") {
		t.Errorf("empty list: exit %d %q", code, out)
	}
}
