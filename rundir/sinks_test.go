package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/internal/logread"
)

func TestSinksFanOut(t *testing.T) {
	dir := t.TempDir()
	d, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg := map[string]any{"model": "m", "wandb": map[string]any{"project": "p"}}
	var notes []string
	env := func(k string) string { return map[string]string{"WANDB_MODE": "disabled"}[k] }
	s, err := OpenSinks(d, SinkOptions{Wandb: Wandb{On: true, Project: "p"}, WandbConfig: cfg, Env: env, Notify: func(l string) { notes = append(notes, l) },
		Now: func() time.Time { return time.Unix(1700000000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "WANDB_MODE=disabled") {
		t.Errorf("notes %q", notes)
	}
	if err := s.Eval(map[string]any{"step": 0, "reward": 0.25, "env/x/reward": 0.25}); err != nil {
		t.Fatal(err)
	}
	if err := s.Step(map[string]any{"step": 1, "reward": 0.5, "note": "not a number"}); err != nil {
		t.Fatal(err)
	}
	if err := s.End(Finished); err != nil || s.End(Failed) != nil {
		t.Fatal(err)
	}
	m, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	e, _ := os.ReadFile(filepath.Join(dir, "eval.jsonl"))
	if string(e) != `{"env/x/reward":0.25,"reward":0.25,"step":0}`+"\n" {
		t.Errorf("eval.jsonl %q", e)
	}
	if len(m) == 0 {
		t.Error("metrics.jsonl is empty")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.1700000000.*"))
	if len(files) != 1 {
		t.Fatalf("events files %v", files)
	}
	evs, err := logread.ReadEvents(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[1].Scalars["eval/reward"] != 0.25 || evs[1].Scalars["eval/env/x/reward"] != 0.25 || evs[2].Scalars["reward"] != 0.5 || evs[2].Step != 1 {
		t.Errorf("events %+v", evs)
	}
	if _, ok := evs[2].Scalars["note"]; ok {
		t.Error("a string reached TensorBoard as a scalar")
	}
}
