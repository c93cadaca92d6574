package trainer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/rundir"
)

// flipLastBit flips one bit of a file's last byte: for safetensors, a bit
// of the last tensor's data, which no format check can see.
func flipLastBit(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0x10
	os.WriteFile(p, b, 0o644)
}

// editState rewrites a checkpoint's state.json and its checksums, as a
// state.json that is wrong but consistent with them would be.
func editState(t *testing.T, ckpt string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(ckpt, "state.json")
	b, _ := os.ReadFile(p)
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	edit(st)
	b, _ = json.Marshal(st)
	os.WriteFile(p, b, 0o644)
	if err := rundir.WriteChecksums(ckpt); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint whose adapter or optimizer state changed after it was
// written (one flipped bit), or whose state.json values grpo cannot have
// written, is passed over with a warning naming the file or key, and the
// run resumes from the one before and ends as the uninterrupted run did.
func TestResumeVerifiesCheckpoint(t *testing.T) {
	cfg, ref := finishedRun(t)
	want := deterministicMetrics(t, ref)
	newest := filepath.Join("checkpoints", "step-4")
	cases := []struct {
		name   string
		damage func(ckpt string)
		says   string
	}{
		{"bit-flipped adapter", func(c string) { flipLastBit(t, filepath.Join(c, "adapter", "adapter_model.safetensors")) },
			"adapter/adapter_model.safetensors does not match its sha256 in checksums.sha256"},
		{"bit-flipped optimizer state", func(c string) { flipLastBit(t, filepath.Join(c, "optimizer.safetensors")) },
			"optimizer.safetensors does not match its sha256 in checksums.sha256"},
		{"negative cursor", func(c string) { editState(t, c, func(st map[string]any) { st["cursors"] = []int{-5} }) },
			"state.json: cursors[0] is -5"},
		{"cursor past the data", func(c string) { editState(t, c, func(st map[string]any) { st["cursors"] = []int{1 << 40} }) },
			"state.json: cursors [1099511627776] draw 1099511627776 examples, past the"},
		{"step of another directory", func(c string) { editState(t, c, func(st map[string]any) { st["step"] = 6 }) },
			"state.json: step is 6 in the directory of step 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			copyTree(t, ref, run)
			tc.damage(filepath.Join(run, newest))
			var progress bytes.Buffer
			res, err := runConfig(t, cfg, WithResume(run), WithProgress(&progress))
			if err != nil {
				t.Fatalf("resume failed instead of falling back: %v", err)
			}
			if warn := "warning: checkpoint " + filepath.Join(run, newest) + " is damaged"; !strings.Contains(progress.String(), warn) || !strings.Contains(progress.String(), tc.says) {
				t.Errorf("no warning naming the checkpoint and %q:\n%s", tc.says, progress.String())
			}
			if res.Steps != 4 {
				t.Errorf("ended at step %d, want 4", res.Steps)
			}
			if got := deterministicMetrics(t, run); !reflect.DeepEqual(got, want) {
				t.Errorf("metrics after the fallback differ from the uninterrupted run:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// The temporaries of writes killed midway (a checkpoint directory, a file
// of the run directory) are gone after the next start, which says so.
func TestResumeRemovesInterruptedWrites(t *testing.T) {
	cfg, run := finishedRun(t)
	stale := []string{
		filepath.Join(run, "checkpoints", ".step-6.tmp-2818284590"),
		filepath.Join(run, ".config.toml.tmp-0123456789ab"),
	}
	os.MkdirAll(stale[0], 0o755)
	os.WriteFile(filepath.Join(stale[0], "optimizer.safetensors"), []byte("half"), 0o644)
	os.WriteFile(stale[1], []byte("half"), 0o644)
	if _, err := runConfig(t, cfg, WithResume(run)); err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(filepath.Join(run, "log.txt"))
	for _, p := range stale {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
		if !strings.Contains(string(log), "removed "+p) {
			t.Errorf("log.txt does not say %s was removed", p)
		}
	}
}

// A checkpoint grpo wrote before checksums (format v1) still resumes, from
// itself and without a warning.
func TestResumeFromV1Checkpoint(t *testing.T) {
	cfg, run := finishedRun(t)
	ckpt := filepath.Join(run, "checkpoints", "step-4")
	editState(t, ckpt, func(st map[string]any) {
		st["format"] = checkpointFormatV1
		delete(st, "max_examples_per_step")
	})
	os.Remove(filepath.Join(ckpt, rundir.ChecksumsFile))
	var progress bytes.Buffer
	if _, err := runConfig(t, cfg, WithResume(run), WithProgress(&progress)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(progress.String(), "warning") {
		t.Errorf("a v1 checkpoint was passed over:\n%s", progress.String())
	}
	log, _ := os.ReadFile(filepath.Join(run, "log.txt"))
	if !strings.Contains(string(log), "resumed from "+ckpt) {
		t.Errorf("log.txt does not say it resumed from %s", ckpt)
	}
}
