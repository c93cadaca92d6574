package trainer

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// copyTree copies a run directory, so each case damages its own copy.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// finishedRun trains the 4-step fixture with a checkpoint every 2 steps
// and returns its config path and run directory.
func finishedRun(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := writeRunFixture(t, dir, 4, 2)
	out := filepath.Join(dir, "run")
	if _, err := runConfig(t, cfg, WithOutput(out)); err != nil {
		t.Fatal(err)
	}
	return cfg, out
}

// TestResumeFallsBackPastDamagedCheckpoint: a damaged newest checkpoint
// (torn state.json, missing adapter file, corrupt safetensors) is passed
// over with a warning naming it, and the run resumes from the one before,
// ending with the metrics of the uninterrupted run.
func TestResumeFallsBackPastDamagedCheckpoint(t *testing.T) {
	cfg, ref := finishedRun(t)
	want := deterministicMetrics(t, ref)
	newest := filepath.Join("checkpoints", "step-4")
	cases := map[string]func(run string){
		"torn state.json": func(run string) {
			p := filepath.Join(run, newest, "state.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
		},
		"missing adapter file": func(run string) {
			os.Remove(filepath.Join(run, newest, "adapter", "adapter_model.safetensors"))
		},
		"corrupt optimizer safetensors": func(run string) {
			os.WriteFile(filepath.Join(run, newest, "optimizer.safetensors"), []byte("\x10\x00\x00\x00\x00\x00\x00\x00{not json"), 0o644)
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			copyTree(t, ref, run)
			damage(run)
			var progress bytes.Buffer
			res, err := runConfig(t, cfg, WithResume(run), WithProgress(&progress))
			if err != nil {
				t.Fatalf("resume failed instead of falling back: %v", err)
			}
			if res.Steps != 4 {
				t.Errorf("ended at step %d, want 4", res.Steps)
			}
			if !strings.Contains(progress.String(), "warning: checkpoint "+filepath.Join(run, newest)+" is damaged") {
				t.Errorf("no warning naming the damaged checkpoint:\n%s", progress.String())
			}
			if got := deterministicMetrics(t, run); !reflect.DeepEqual(got, want) {
				t.Errorf("metrics after the fallback differ from the uninterrupted run:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestResumeWithoutCheckpointStartsOver: a run killed before its first
// checkpoint (here: its directory as such a kill leaves it — config.toml
// and two logged steps, no checkpoint, no adapter) resumes from step 0
// with its saved config and ends as the uninterrupted run did.
func TestResumeWithoutCheckpointStartsOver(t *testing.T) {
	cfg, ref := finishedRun(t)
	want := deterministicMetrics(t, ref)
	run := filepath.Join(t.TempDir(), "run")
	copyTree(t, ref, run)
	os.RemoveAll(filepath.Join(run, "checkpoints"))
	os.MkdirAll(filepath.Join(run, "checkpoints"), 0o755)
	os.RemoveAll(filepath.Join(run, "adapter"))
	b, _ := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	lines := strings.SplitAfter(string(b), "\n")
	os.WriteFile(filepath.Join(run, "metrics.jsonl"), []byte(lines[0]+lines[1]), 0o644)

	if _, err := runConfig(t, cfg, WithOutput(run)); err == nil || !strings.Contains(err.Error(), "already holds a run; resume it") {
		t.Fatalf("a fresh start in the dir: %v", err)
	}
	res, err := runConfig(t, filepath.Join(run, "config.toml"), WithResume(run))
	if err != nil {
		t.Fatalf("resume of a run with no checkpoint: %v", err)
	}
	if res.Steps != 4 {
		t.Errorf("ended at step %d, want 4", res.Steps)
	}
	if got := deterministicMetrics(t, run); !reflect.DeepEqual(got, want) {
		t.Errorf("metrics differ from the uninterrupted run:\n got %v\nwant %v", got, want)
	}
}

// TestResumeWarnsOfMissingMetrics: a checkpoint claiming more steps than
// metrics.jsonl holds resumes (its adapter and optimizer are whole) with a
// warning that names both counts.
func TestResumeWarnsOfMissingMetrics(t *testing.T) {
	cfg, ref := finishedRun(t)
	b, _ := os.ReadFile(filepath.Join(ref, "metrics.jsonl"))
	lines := strings.SplitAfter(string(b), "\n")
	os.WriteFile(filepath.Join(ref, "metrics.jsonl"), []byte(lines[0]), 0o644)
	var progress bytes.Buffer
	if _, err := runConfig(t, cfg, WithResume(ref), WithProgress(&progress)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "metrics.jsonl holds 1 of the 4 steps checkpoint") {
		t.Errorf("no warning about the missing metrics:\n%s", progress.String())
	}
}

// TestResumeAfterConfigEdit: an edit of a key the checkpoint is bound to
// (seed) is refused in one line naming the key, both values and the fix;
// an edit that only changes how the run goes on (max_steps) resumes with a
// warning naming it.
func TestResumeAfterConfigEdit(t *testing.T) {
	_, ref := finishedRun(t)
	path := filepath.Join(ref, "config.toml")
	orig, _ := os.ReadFile(path)

	os.WriteFile(path, bytes.Replace(orig, []byte("seed = 7"), []byte("seed = 8"), 1), 0o644)
	_, err := runConfig(t, path, WithResume(ref))
	if err == nil || !strings.Contains(err.Error(), "seed 7 → 8") || !strings.Contains(err.Error(), "undo the edit") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a seed edit: want one line naming seed 7 → 8 and the fix, got %v", err)
	}

	os.WriteFile(path, bytes.Replace(orig, []byte("max_steps = 4"), []byte("max_steps = 5"), 1), 0o644)
	var progress bytes.Buffer
	res, err := runConfig(t, path, WithResume(ref), WithProgress(&progress))
	if err != nil {
		t.Fatalf("a max_steps edit: %v", err)
	}
	if res.Steps != 5 || !strings.Contains(progress.String(), "max_steps 4 → 5") {
		t.Errorf("ended at step %d; progress:\n%s", res.Steps, progress.String())
	}
}
