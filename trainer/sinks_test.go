package trainer

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/logread"
	"github.com/grpo-dev/grpo/rundir"
)

// noWandbCredentials leaves the test without an API key or W&B server,
// whatever the machine has (a key in the environment or ~/.netrc).
func noWandbCredentials(t *testing.T) {
	for _, k := range []string{"WANDB_API_KEY", "WANDB_MODE", "WANDB_BASE_URL", "WANDB_OFFLINE", "NETRC"} {
		t.Setenv(k, "")
	}
	t.Setenv("HOME", t.TempDir())
}

func withWandb(t *testing.T, path string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[wandb]\nproject = \"grpo-bar\"\n")
	f.Close()
}

// metricsRewards is each step's reward in metrics.jsonl, by step.
func metricsRewards(t *testing.T, runDir string) map[int64]float64 {
	rows, err := rundir.ReadJSONL(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]float64{}
	for _, r := range rows {
		out[int64(r["step"].(float64))] = r["reward"].(float64)
	}
	return out
}

func globOne(t *testing.T, pattern string, n int) []string {
	t.Helper()
	m, _ := filepath.Glob(pattern)
	sort.Strings(m)
	if len(m) != n {
		t.Fatalf("%s: %d matches %v, want %d", pattern, len(m), m, n)
	}
	return m
}

// TestWandbWithoutKeyIsOfflineAndSaysSo is the bar: a train
// config with [wandb] and no key or host prints one line saying where the
// metrics went; the run directory has an offline W&B run in the layout
// `wandb sync` reads and tfevents with every step's reward, both decoded
// by independent readers.
func TestWandbWithoutKeyIsOfflineAndSaysSo(t *testing.T) {
	noWandbCredentials(t)
	dir := t.TempDir()
	cfg := writeRunFixture(t, dir, 3, 0)
	withWandb(t, cfg)
	out := filepath.Join(dir, "run")
	var progress bytes.Buffer
	if _, err := runConfig(t, cfg, WithOutput(out), WithProgress(&progress)); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(progress.String(), "\n") {
		if strings.Contains(l, "W&B") || strings.Contains(strings.ToLower(l), "wandb") {
			lines = append(lines, l)
		}
	}
	offline := globOne(t, filepath.Join(out, "wandb", "offline-run-*"), 1)[0]
	if len(lines) != 1 || !strings.Contains(lines[0], "offline run at "+offline) || !strings.Contains(lines[0], "no API key") || !strings.Contains(lines[0], "wandb sync "+offline) {
		t.Fatalf("W&B lines in the output: %q", lines)
	}

	want := metricsRewards(t, out)
	if len(want) != 3 {
		t.Fatalf("metrics.jsonl has %d steps", len(want))
	}
	wb := globOne(t, filepath.Join(offline, "run-*.wandb"), 1)[0]
	recs, err := logread.ReadWandb(wb)
	if err != nil {
		t.Fatal(err)
	}
	if recs[1].Kind != "run" || recs[1].Project != "grpo-bar" || recs[1].Items["max_steps"] != "3" || filepath.Base(wb) != "run-"+recs[1].RunID+".wandb" {
		t.Errorf("run record %+v", recs[1])
	}
	got := map[int64]float64{}
	for _, r := range recs {
		if r.Kind == "history" {
			got[r.Step], _ = strconv.ParseFloat(r.Items["reward"], 64)
		}
	}
	if last := recs[len(recs)-1]; last.Kind != "final" || recs[len(recs)-2].Kind != "exit" || recs[len(recs)-2].ExitCode != 0 {
		t.Errorf("the run does not end with exit 0 and final: %+v", recs[len(recs)-2:])
	}
	for step, r := range want {
		if got[step] != r {
			t.Errorf("W&B step %d reward %v, metrics.jsonl %v", step, got[step], r)
		}
	}

	evs, err := logread.ReadEvents(globOne(t, filepath.Join(out, "events.out.tfevents.*"), 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	tb := map[int64]float32{}
	for _, e := range evs[1:] {
		if r, ok := e.Scalars["reward"]; ok {
			tb[e.Step] = r
		}
	}
	if evs[0].FileVersion != "brain.Event:2" || len(tb) != len(want) {
		t.Fatalf("events: %+v", evs)
	}
	for step, r := range want {
		if tb[step] != float32(r) {
			t.Errorf("tfevents step %d reward %v, metrics.jsonl %v", step, tb[step], r)
		}
	}
}

// TestResumedRunAppendsEventsAndContinuesWandbRun: a resumed run writes a
// second events file starting with a restart marker and a second W&B run
// directory with the same run id, marked resumed.
func TestResumedRunAppendsEventsAndContinuesWandbRun(t *testing.T) {
	noWandbCredentials(t)
	t.Setenv("WANDB_MODE", "offline")
	dir := t.TempDir()
	cfg := writeRunFixture(t, dir, 2, 0)
	withWandb(t, cfg)
	out := filepath.Join(dir, "run")
	if _, err := runConfig(t, cfg, WithOutput(out)); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, bytes.Replace(text, []byte("max_steps = 2"), []byte("max_steps = 4"), 1), 0o644)
	if _, err := runConfig(t, cfg, WithResume(out)); err != nil {
		t.Fatal(err)
	}
	files := globOne(t, filepath.Join(out, "events.out.tfevents.*"), 2)
	second, err := logread.ReadEvents(files[1])
	if err != nil {
		t.Fatal(err)
	}
	if !second[1].SessionStart || second[1].Step != 3 {
		t.Errorf("second events file does not start with a restart at step 3: %+v", second[:2])
	}
	want := metricsRewards(t, out)
	tb := map[int64]float32{}
	for _, f := range files {
		evs, _ := logread.ReadEvents(f)
		for _, e := range evs {
			if r, ok := e.Scalars["reward"]; ok {
				tb[e.Step] = r
			}
		}
	}
	for step := int64(1); step <= 4; step++ {
		if tb[step] != float32(want[step]) {
			t.Errorf("step %d: tfevents %v, metrics.jsonl %v", step, tb[step], want[step])
		}
	}
	runs := globOne(t, filepath.Join(out, "wandb", "offline-run-*", "run-*.wandb"), 2)
	a, _ := logread.ReadWandb(runs[0])
	b, err := logread.ReadWandb(runs[1])
	if err != nil {
		t.Fatal(err)
	}
	if a[1].RunID != b[1].RunID || !b[1].Resumed || b[1].StartingStep != 3 {
		t.Errorf("resumed W&B run %+v after %+v", b[1], a[1])
	}
}
