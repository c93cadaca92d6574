package rundir

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// writeFakeRun lays out a run directory as the trainer writes it: a config,
// steps with rewards, evals, a log ending in last, and optionally the
// adapter and checkpoints.
func writeFakeRun(t *testing.T, dir string, steps int, last string, adapter bool) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "checkpoints", "step-2"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "checkpoints", "step-4"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "config.toml"), []byte("model = \"m\"\nmax_steps = 10\nbatch_size = 8\nrollouts_per_example = 4\n[sampling]\nmax_tokens = 8\n[[env]]\nid = \"reverse-text\"\n"), 0o644))
	rd := &Dir{Path: dir}
	for s := 1; s <= steps; s++ {
		must(rd.AppendJSONL("metrics.jsonl", map[string]any{"step": s, "reward": 0.1 * float64(s), "loss": -0.5 / float64(s), "grad_norm": 1.5, "kl": 0.01, "entropy": 2.0}))
	}
	must(rd.AppendJSONL("eval.jsonl", map[string]any{"step": 0, "reward": 0.05}))
	must(rd.AppendJSONL("eval.jsonl", map[string]any{"step": 4, "reward": 0.25}))
	log := "2025-01-02 03:04:05 model m on cpu\n2025-01-02 03:04:06 step 1 reward 0.1\n"
	if last != "" {
		log += "2025-01-02 03:04:07 " + last + "\n"
	}
	must(os.WriteFile(filepath.Join(dir, "log.txt"), []byte(log), 0o644))
	if adapter {
		must(os.MkdirAll(filepath.Join(dir, "adapter"), 0o755))
	}
}

// readTestConfig reads the two keys writeFakeRun's config sets or leaves
// at their defaults, as cmd/grpo's reader built on config.Load does.
func readTestConfig(path string) (RunConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return RunConfig{}, err
	}
	var c struct {
		MaxSteps   int `toml:"max_steps"`
		Checkpoint struct {
			Dir string `toml:"dir"`
		} `toml:"checkpoint"`
	}
	c.Checkpoint.Dir = "checkpoints"
	if err := toml.Unmarshal(data, &c); err != nil {
		return RunConfig{}, err
	}
	return RunConfig{MaxSteps: c.MaxSteps, CheckpointDir: c.Checkpoint.Dir}, nil
}

func TestRunStatus(t *testing.T) {
	cases := []struct {
		last    string
		adapter bool
		silent  time.Duration
		want    string
	}{
		{"finished 10 steps; adapter in x", true, time.Hour, Finished},
		{"finished 10 steps; adapter in x", false, time.Hour, Failed},
		{"interrupted after step 3; resume with ...", false, time.Hour, Interrupted},
		{"error: step 4: boom", false, time.Second, Failed},
		{"step 3 reward 0.5", false, 10 * time.Second, Running},
		{"step 3 reward 0.5", false, 10 * time.Minute, Interrupted},
		{"", false, 0, Running},
	}
	for _, c := range cases {
		if got, _ := runStatus(c.last, c.adapter, c.silent); got != c.want {
			t.Errorf("runStatus(%q, %v, %s) = %s, want %s", c.last, c.adapter, c.silent, got, c.want)
		}
	}
}

func TestListRuns(t *testing.T) {
	root := t.TempDir()
	writeFakeRun(t, filepath.Join(root, "done"), 10, "finished 10 steps; adapter in done/adapter", true)
	writeFakeRun(t, filepath.Join(root, "live"), 4, "", false)
	writeFakeRun(t, filepath.Join(root, "stale"), 3, "", false)
	os.MkdirAll(filepath.Join(root, "not-a-run"), 0o755)
	old := time.Now().Add(-time.Hour)
	for _, f := range []string{"log.txt", "metrics.jsonl", "eval.jsonl"} {
		os.Chtimes(filepath.Join(root, "stale", f), old, old)
		os.Chtimes(filepath.Join(root, "done", f), old.Add(time.Minute), old.Add(time.Minute))
	}
	runs, err := List(root, time.Now(), readTestConfig)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs: %+v", len(runs), runs)
	}
	byName := map[string]Info{}
	var order []string
	for _, r := range runs {
		byName[r.Name] = r
		order = append(order, r.Name)
	}
	if strings.Join(order, ",") != "live,done,stale" {
		t.Errorf("order %v, want newest first", order)
	}
	d := byName["done"]
	if d.Status != Finished || d.Steps != 10 || d.MaxSteps != 10 || !d.HasReward || d.LastReward != 1.0 || !d.HasEval || d.LastEvalReward != 0.25 || d.EvalStep != 4 {
		t.Errorf("done: %+v", d)
	}
	if s := byName["live"]; s.Status != Running || s.Steps != 4 {
		t.Errorf("live: %+v", s)
	}
	if s := byName["stale"]; s.Status != Interrupted || !strings.Contains(s.Detail, "killed") {
		t.Errorf("stale: %+v", s)
	}
	if runs, err := List(filepath.Join(root, "missing"), time.Now(), readTestConfig); err != nil || len(runs) != 0 {
		t.Errorf("missing dir: %v %v", runs, err)
	}
	if _, err := Inspect(filepath.Join(root, "not-a-run"), time.Now(), readTestConfig); err == nil || !strings.Contains(err.Error(), "not a run directory") {
		t.Errorf("not a run: %v", err)
	}
}

func TestInspectRunDetail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	writeFakeRun(t, dir, 10, "finished 10 steps; adapter in r/adapter", true)
	os.WriteFile(filepath.Join(dir, "rewards.png"), []byte("png"), 0o644)
	d, err := InspectDetail(dir, time.Now(), readTestConfig)
	if err != nil {
		t.Fatal(err)
	}
	// Rewards 0.1..1.0: the first and last 10% are steps 1 and 10.
	if d.MaxSteps != 10 || abs(d.Summary.FirstReward-0.1) > 1e-12 || abs(d.Summary.LastReward-1.0) > 1e-12 {
		t.Errorf("detail %+v", d)
	}
	if d.Latest["loss"] != -0.05 || d.Latest["grad_norm"] != 1.5 || len(d.Checkpoints) != 2 || d.Checkpoints[1] != 4 {
		t.Errorf("latest %v checkpoints %v", d.Latest, d.Checkpoints)
	}
	if d.Adapter != filepath.Join(dir, "adapter") || d.Plot != filepath.Join(dir, "rewards.png") {
		t.Errorf("paths %q %q", d.Adapter, d.Plot)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFollowLog appends lines to a log while FollowLog follows it: every
// line arrives once, in order, a line written in two pieces arrives whole,
// an "interrupted" line followed by more lines does not stop it, and the
// final line does.
func TestFollowLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log.txt")
	var out syncBuffer
	errc := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { errc <- FollowLog(ctx, dir, &out, 5*time.Millisecond, time.Minute) }()
	appendLog := func(s string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the log does not exist yet
	// A resumed run's log: the "interrupted" line is not the last one.
	appendLog("2025-01-02 03:04:05 step 1 reward 0.1\n2025-01-02 03:04:06 interrupted after step 1; resume with x\n2025-01-02 03:04:07 resumed from ck\n")
	appendLog("2025-01-02 03:04:08 step 2 rew")
	if strings.Contains(out.String(), "step 2") {
		t.Error("a partial line was printed")
	}
	appendLog("ard 0.2\n")
	appendLog("2025-01-02 03:04:09 finished 2 steps; adapter in a\n")
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("FollowLog did not stop at the finished line")
	}
	want := []string{"step 1 reward 0.1", "interrupted after step 1", "resumed from ck", "step 2 reward 0.2", "finished 2 steps"}
	got := out.String()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(lines), got)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d = %q, want %q", i, lines[i], w)
		}
	}
}

// TestFollowLogIdle stops following a run that went silent.
func TestFollowLogIdle(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "log.txt"), []byte("2025-01-02 03:04:05 step 1 reward 0.1\n"), 0o644)
	var out bytes.Buffer
	start := time.Now()
	if err := FollowLog(context.Background(), dir, &out, 5*time.Millisecond, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second || !strings.Contains(out.String(), "step 1") || !strings.Contains(out.String(), "not running") {
		t.Errorf("%s after %s", out.String(), time.Since(start))
	}
}
