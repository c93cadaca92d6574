package main

import (
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/endpoints"
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

// TestLegacyGEPABaseUsesInitEndpoints: configs/gepa/base.toml, which
// grpo init --legacy-configs writes, names its student and teacher by
// endpoint ids of the endpoints.toml grpo init writes beside it (issue
// 27: "openai/gpt-4.1-mini" was no id there, so GEPA took it for a hub
// model to download), and each is a chat endpoint, as GEPA needs.
func TestLegacyGEPABaseUsesInitEndpoints(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lab")
	if code, _, stderr := runCLI("init", dir, "--legacy-configs"); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	path := filepath.Join(dir, "configs", "gepa", "base.toml")
	g, err := config.LoadGEPA(path)
	if err == nil {
		err = g.ValidateEnv(env.Check)
	}
	if err != nil {
		t.Fatal(err)
	}
	reg, err := endpoints.Load(g.EndpointsFile(path))
	if err != nil {
		t.Fatal(err)
	}
	for key, name := range map[string]string{"model": g.Model, "reflection_model": g.ReflectionModel} {
		c, err := reg.Client(name, endpoints.Options{})
		if err != nil {
			t.Errorf("%s = %q: %v", key, name, err)
			continue
		}
		if c.Type() != endpoints.TypeChat {
			t.Errorf("%s = %q: type %s", key, name, c.Type())
		}
	}
}
