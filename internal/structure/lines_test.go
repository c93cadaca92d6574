package structure

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lineBars are the most non-test lines a package's own directory may hold.
// These packages sit where work arrives first (the loop, the CLI, the
// environment registry), so code that belongs to another package lands
// here unless a bar stops it: a package past its bar moves code to the
// package DESIGN.md says owns it (run directories to rundir, evaluation to
// eval, memory planning to estimate, CLI-independent logic out of
// cmd/grpo), never squashes lines or drops comments to get under.
var lineBars = map[string]int{
	"trainer":  1600,
	"cmd/grpo": 3300,
	"env":      2500,
}

// TestLineBars counts every line of the non-test .go files directly in
// each barred package's directory (every build tag; subpackages apart),
// as `cat trainer/*.go | wc -l` does without the _test files.
func TestLineBars(t *testing.T) {
	root := moduleRoot(t)
	for pkg, bar := range lineBars {
		n, files := packageLines(t, filepath.Join(root, filepath.FromSlash(pkg)))
		if files == 0 {
			t.Errorf("%s: no Go files; update lineBars if the package moved", pkg)
			continue
		}
		if n > bar {
			t.Errorf("%s holds %d non-test lines, over its bar of %d: move code to the package that owns it (DESIGN.md's package table)", pkg, n, bar)
		} else {
			t.Logf("%s: %d non-test lines of %d", pkg, n, bar)
		}
	}
}

// packageLines counts the newlines of the non-test .go files in dir.
func packageLines(t *testing.T, dir string) (lines, files int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
		files++
	}
	return lines, files
}

// moduleRoot is the directory of go.mod, two levels above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod two levels above internal/structure: %v", err)
	}
	return dir
}
