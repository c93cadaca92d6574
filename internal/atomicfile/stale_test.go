package atomicfile

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// A write killed midway leaves a temporary; RemoveStale removes those of
// Write and WriteDir and nothing else.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	keep := []string{"step-4", "state.json", ".hidden", "notes.tmp-1", ".x.tmp-", ".x.tmp-zz"}
	for _, n := range keep {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	f, _ := createTemp(dir, ".state.json.tmp-", 0o644)
	f.Close()
	d, _ := os.MkdirTemp(dir, ".step-6.tmp-")
	os.WriteFile(filepath.Join(d, "optimizer.safetensors"), []byte("half"), 0o644)
	removed, err := RemoveStale(dir)
	if err != nil || len(removed) != 2 {
		t.Fatalf("removed %v, %v; want the two temporaries", removed, err)
	}
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{".hidden", ".x.tmp-", ".x.tmp-zz", "notes.tmp-1", "state.json", "step-4"}
	if !reflect.DeepEqual(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}
