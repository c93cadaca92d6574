package main

import (
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
)

// TestInitGEPAConfigs: the GEPA configs grpo init writes parse and
// validate through config's GEPA schema, env ids included.
func TestInitGEPAConfigs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lab")
	if code, _, stderr := runCLI("init", dir); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "configs", "gepa", "*.toml"))
	if len(files) == 0 {
		t.Fatal("init wrote no configs/gepa files")
	}
	for _, f := range files {
		g, err := config.LoadGEPA(f)
		if err == nil {
			err = g.ValidateEnv(env.Check)
		}
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}
