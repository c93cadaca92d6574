package trainer

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRecomputeTrainsTheSame: runs with recompute = "none", "selective",
// "layer:1", "selective+layer:1" and "layer" log the same metrics step for step and end with byte-identical
// adapters (the CPU backward's recompute reruns the same ops); the run log
// names the policy, and "auto" (the default) resolves to one with its
// reason.
func TestRecomputeTrainsTheSame(t *testing.T) {
	dir := t.TempDir()
	const steps = 3
	base := writeRunFixture(t, dir, steps, 0)
	text, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	var want []map[string]any
	var wantAdapter []byte
	for _, policy := range []string{"none", "selective", "layer:1", "selective+layer:1", "layer", "auto"} {
		cfg := filepath.Join(dir, policy+".toml")
		if err := os.WriteFile(cfg, []byte("recompute = \""+policy+"\"\n"+string(text)), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "run-"+policy)
		if _, err := runConfig(t, cfg, WithOutput(out)); err != nil {
			t.Fatalf("recompute = %s: %v", policy, err)
		}
		log, _ := os.ReadFile(filepath.Join(out, "log.txt"))
		// A tiny model fits any free memory (or, where it cannot be read,
		// auto keeps every activation too).
		wantLog := "recompute = " + policy + " (set in the config)"
		if policy == "auto" {
			wantLog = "recompute = none (auto"
			if !strings.Contains(string(log), wantLog) {
				wantLog = `recompute = none (recompute = "auto" with the free memory unknown`
			}
		}
		if !strings.Contains(string(log), wantLog) {
			t.Errorf("recompute = %s: log.txt lacks %q:\n%s", policy, wantLog, log)
		}
		got := deterministicMetrics(t, out)
		adapter, _ := os.ReadFile(filepath.Join(out, "adapter", "adapter_model.safetensors"))
		if want == nil {
			want, wantAdapter = got, adapter
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("recompute = %s: metrics\n%v\nwant (none)\n%v", policy, got, want)
		}
		if len(adapter) == 0 || string(adapter) != string(wantAdapter) {
			t.Errorf("recompute = %s: the final adapter differs from recompute = none's", policy)
		}
	}
}
