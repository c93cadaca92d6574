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

// TestSeveralDevicesRefused: a config naming two devices (here CPU
// replicas) while [inference] generates the rollouts on a server is
// refused before the run directory is made, in one line (data parallel
// training plays its rollouts in process); one device at an index (cpu:1)
// trains as the config says.
func TestSeveralDevicesRefused(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeRunFixture(t, dir, 1, 0)
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(dir, "two.toml")
	if err := os.WriteFile(two, append(append([]byte("devices = [\"cpu:0-1\"]\n"), text...), "\n[inference]\nurl = \"http://127.0.0.1:9/v1\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	_, err = runConfig(t, two, WithOutput(out))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), `devices = ["cpu:0-1"] names 2 devices, but [inference] generates the rollouts on a server`) {
		t.Fatalf("two devices with [inference]: %v", err)
	}
	if _, serr := os.Stat(out); !os.IsNotExist(serr) {
		t.Errorf("the refused run made its directory: %v", serr)
	}
	one := filepath.Join(dir, "one.toml")
	if err := os.WriteFile(one, append([]byte("devices = [\"cpu:1\"]\n"), text...), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := runConfig(t, one, WithOutput(filepath.Join(dir, "run1"))); err != nil || res.Steps != 1 {
		t.Fatalf("devices = [\"cpu:1\"]: %+v, %v", res, err)
	}
}
