package trainer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/rundir"
)

// TestSetupFailureShowsAsFailed: a run that fails after its directory was
// made (here: the model has no config.json) writes "error: …" to log.txt,
// so grpo runs list shows it as failed with the cause, not as running and
// later as interrupted (issue 27).
func TestSetupFailureShowsAsFailed(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeRunFixture(t, dir, 2, 0)
	if err := os.Remove(filepath.Join(dir, "model", "config.json")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	_, err := runConfig(t, cfgPath, WithOutput(out))
	if err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Fatalf("want a failure naming config.json, got %v", err)
	}
	info, ierr := rundir.Inspect(out, time.Now(), ReadRunConfig)
	if ierr != nil {
		t.Fatal(ierr)
	}
	if info.Status != rundir.Failed || !strings.HasPrefix(info.Detail, "error: ") || !strings.Contains(info.Detail, "config.json") {
		t.Errorf("runs list: %s %q", info.Status, info.Detail)
	}
}
