package gepa

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// levelStudent solves example i when its prompt is "Level k" with k at
// least i's difficulty (i%3 + 1): "Level 3" is the known best prompt.
func levelStudent() *scriptedStudent {
	return &scriptedStudent{nTrain: 6, nVal: 6, score: func(p string, _ Split, id int) float64 {
		var k int
		if _, err := fmt.Sscanf(p, "Level %d", &k); err == nil && k >= id%3+1 {
			return 1
		}
		return 0
	}}
}

// failureTeacher improves the instruction by one level only when the
// traces it is shown hold a failure; shown none, it hands back the same
// instruction (which the optimiser rejects without spending calls).
func failureTeacher() *scriptedTeacher {
	return &scriptedTeacher{reply: func(prompt string, _ int) string {
		cur := currentInstruction(prompt)
		if !strings.Contains(prompt, "reward 0.00") {
			return "```\n" + cur + "\n```"
		}
		var k int
		fmt.Sscanf(cur, "Level %d", &k)
		return fmt.Sprintf("The assistant fails the harder tasks.\n```\nLevel %d\n```", k+1)
	}}
}

func levelOptions(dir string) Options {
	return Options{SeedPrompt: "Level 0", MaxCalls: 120, MinibatchSize: 2, Seed: 11, Dir: dir, Settings: map[string]any{"env": "levels", "n": 6}}
}

// TestFindsKnownBest: the teacher that improves only on failures leads the
// run to "Level 3" within its budget, and the four output files are there.
func TestFindsKnownBest(t *testing.T) {
	dir := t.TempDir()
	res, err := Run(context.Background(), levelStudent(), failureTeacher(), levelOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	if res.Best.Text != "Level 3" || res.Best.Mean() != 1 || res.Calls > 120 {
		t.Fatalf("best %q (%.3f) after %d calls; want Level 3 (1.0) within 120", res.Best.Text, res.Best.Mean(), res.Calls)
	}
	got, err := os.ReadFile(filepath.Join(dir, PromptFile))
	if err != nil || string(got) != "Level 3" {
		t.Fatalf("%s: %q, %v", PromptFile, got, err)
	}
	for _, f := range []string{ResultsFile, FrontierFile, MetadataFile, PlotFile, StateFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	rows := bytes.Count(mustRead(t, filepath.Join(dir, ResultsFile)), []byte("\n"))
	if rows != res.Iterations+1 {
		t.Errorf("results.jsonl has %d rows, want %d (the seed and each iteration)", rows, res.Iterations+1)
	}
	if n := bytes.Count(mustRead(t, filepath.Join(dir, FrontierFile)), []byte("\n")); n != 6 {
		t.Errorf("pareto_frontier.jsonl has %d rows, want one per validation instance (6)", n)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cancelOnCall cancels ctx when the teacher is asked for the n-th time
// (0-based), mid-iteration: the run stops as a killed process would,
// after the last saved iteration.
func cancelOnCall(t *scriptedTeacher, n int, cancel context.CancelFunc) *scriptedTeacher {
	inner := t.reply
	t.reply = func(p string, call int) string {
		if call == n {
			cancel()
		}
		return inner(p, call)
	}
	return t
}

// TestResume: a run cancelled in its third reflection (and left with a
// results row its state never saved, as a crash between the two writes
// leaves it) resumes from the last saved iteration and ends with the
// very files an uninterrupted run writes; so does a run stopped by
// gepa.stop and started again.
func TestResume(t *testing.T) {
	whole := t.TempDir()
	if _, err := Run(context.Background(), levelStudent(), failureTeacher(), levelOptions(whole)); err != nil {
		t.Fatal(err)
	}

	cut := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Run(ctx, levelStudent(), cancelOnCall(failureTeacher(), 2, cancel), levelOptions(cut))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	saved, err := loadState(cut)
	if err != nil || saved == nil || saved.Iteration < 1 {
		t.Fatalf("saved state %+v, %v", saved, err)
	}
	f, _ := os.OpenFile(filepath.Join(cut, ResultsFile), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, `{"iteration":%d,"kind":"reflect","accepted":false}`+"\n{\"iterat", saved.Iteration+1)
	f.Close()
	res, err := Run(context.Background(), levelStudent(), failureTeacher(), levelOptions(cut))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Error("the rerun did not resume")
	}
	sameFiles(t, whole, cut)

	stopped := t.TempDir()
	o := levelOptions(stopped)
	o.OnIteration = func(p Progress) {
		if p.Iteration == 2 {
			os.WriteFile(filepath.Join(stopped, StopFile), nil, 0o644)
		}
	}
	res, err = Run(context.Background(), levelStudent(), failureTeacher(), o)
	if err != nil || res.StopReason != StopFileSeen || res.Iterations != 2 {
		t.Fatalf("stop file: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(stopped, StopFile)); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", StopFile, err)
	}
	if _, err := Run(context.Background(), levelStudent(), failureTeacher(), levelOptions(stopped)); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, whole, stopped)

	// Other settings are refused, naming the one that changed.
	o = levelOptions(cut)
	o.Settings = map[string]any{"env": "other", "n": 6}
	if _, err := Run(context.Background(), levelStudent(), failureTeacher(), o); err == nil || !strings.Contains(err.Error(), "env was levels, now other") {
		t.Errorf("other settings: %v", err)
	}
}

func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	for _, f := range []string{StateFile, ResultsFile, FrontierFile, PromptFile} {
		if x, y := mustRead(t, filepath.Join(a, f)), mustRead(t, filepath.Join(b, f)); !bytes.Equal(x, y) {
			t.Errorf("%s differs from the uninterrupted run's:\n%s\nvs\n%s", f, x, y)
		}
	}
}

// TestBudgetNeverExceeded: over many seeds and budgets the calls a run
// reports are the rollouts the student played, and never above max_calls.
func TestBudgetNeverExceeded(t *testing.T) {
	for seed := range uint64(20) {
		s := levelStudent()
		o := levelOptions("")
		o.Seed, o.MaxCalls = seed, 6+int(seed)*3
		res, err := Run(context.Background(), s, failureTeacher(), o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Calls != s.calls || res.Calls > o.MaxCalls || o.MaxCalls-res.Calls >= o.iterationCost(s) {
			t.Errorf("seed %d max_calls %d: %d calls (student %d): want equal, ≤ max and no room left for an iteration", seed, o.MaxCalls, res.Calls, s.calls)
		}
	}
}

// TestResumeRemovesInterruptedWrites: the temporaries of snapshot writes
// killed midway are removed at the next start, which logs each.
func TestResumeRemovesInterruptedWrites(t *testing.T) {
	dir := t.TempDir()
	o := levelOptions(dir)
	o.MaxCalls = 30
	if _, err := Run(context.Background(), levelStudent(), failureTeacher(), o); err != nil {
		t.Fatal(err)
	}
	stale := []string{filepath.Join(dir, "."+StateFile+".tmp-0123456789ab"), filepath.Join(dir, "."+PromptFile+".tmp-ba9876543210")}
	for _, p := range stale {
		os.WriteFile(p, []byte("half"), 0o644)
	}
	var logs []string
	o.MaxCalls = 60
	o.Logf = func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
	if _, err := Run(context.Background(), levelStudent(), failureTeacher(), o); err != nil {
		t.Fatal(err)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
		if !strings.Contains(strings.Join(logs, "\n"), "removed "+p) {
			t.Errorf("no log line says %s was removed", p)
		}
	}
}
