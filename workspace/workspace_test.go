package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	_ "github.com/grpo-dev/grpo/env/builtins"
	"github.com/grpo-dev/grpo/examples"
)

// TestWorkspace writes a workspace and checks that every config in it
// parses and names valid environments, the example environment loads, and
// a second init refuses to overwrite.
func TestWorkspace(t *testing.T) {
	dir := t.TempDir()
	written, err := Write(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != len(Files()) {
		t.Errorf("wrote %d files, want %d", len(written), len(Files()))
	}
	var rel []string
	for _, p := range written {
		r, _ := filepath.Rel(dir, p)
		rel = append(rel, filepath.ToSlash(r))
	}
	sort.Strings(rel)
	// Every embedded file is written, as it is embedded: none is left out
	// of the order Files lists them in.
	fs.WalkDir(examples.Workspace(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if i := sort.SearchStrings(rel, p); i == len(rel) || rel[i] != p {
			t.Errorf("embedded %s was not written", p)
			return nil
		}
		want, _ := fs.ReadFile(examples.Workspace(), p)
		if got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p))); err != nil || string(got) != string(want) {
			t.Errorf("%s: written %q (%v), embedded %q", p, got, err, want)
		}
		return nil
	})
	// What prime lab setup writes (verifiers 8d4b33247), and the example.
	for _, want := range []string{"AGENTS.md", "configs/endpoints.toml", "configs/eval/minimal.toml", "configs/eval/multi-env.toml",
		"configs/gepa/base.toml", "configs/gepa/wordle.toml",
		"configs/rl/alphabet-sort.toml", "configs/rl/gsm8k.toml", "configs/rl/math-python.toml", "configs/rl/reverse-text.toml",
		"configs/rl/wiki-search.toml", "configs/rl/wordle.toml",
		"environments/AGENTS.md", "environments/capitals/environment.toml"} {
		if i := sort.SearchStrings(rel, want); i == len(rel) || rel[i] != want {
			t.Errorf("workspace lacks %s", want)
		}
	}
	t.Chdir(dir) // environments/ of the workspace are found from here

	rl, _ := filepath.Glob(filepath.Join("configs", "rl", "*.toml"))
	if len(rl) != 6 {
		t.Errorf("%d rl configs", len(rl))
	}
	for _, p := range rl {
		cfg, err := config.Load(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		err = cfg.ValidateEnvs(env.Check)
		if err != nil {
			t.Errorf("%v", err)
		}
		if len(cfg.Warnings) > 0 {
			t.Errorf("%s: warnings %q (our own configs should need none)", p, cfg.Warnings)
		}
	}
	evals, _ := filepath.Glob(filepath.Join("configs", "eval", "*.toml"))
	if len(evals) != 2 {
		t.Errorf("%d eval configs", len(evals))
	}
	for _, p := range evals {
		f, err := config.LoadEval(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		specs, err := f.Specs(config.EvalOverrides{})
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
		for _, s := range specs {
			if err := env.Check(s.ID, s.Args); err != nil {
				t.Errorf("%s: [[eval]] %s: %v", p, s.ID, err)
			}
		}
		if len(f.Warnings) > 0 {
			t.Errorf("%s: warnings %q", p, f.Warnings)
		}
	}
	checkGEPAConfigs(t)
	eps, err := endpoints.Load(filepath.Join("configs", "endpoints.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"qwen3-30b-i", "gpt-5-mini", "local"} {
		if reps, _ := eps.Lookup(id); len(reps) != 1 {
			t.Errorf("endpoints.toml lacks %s", id)
		}
	}
	// The example environment: found by id, and both splits load with the
	// data's rows.
	e, err := env.New("capitals", nil)
	if err != nil {
		t.Fatal(err)
	}
	train, err1 := e.Examples("train")
	ev, err2 := e.Examples("eval")
	if err1 != nil || err2 != nil || len(train) != 16 || len(ev) != 6 {
		t.Fatalf("capitals: %d train (%v), %d eval (%v)", len(train), err1, len(ev), err2)
	}
	if !strings.Contains(ev[0].Prompt[len(ev[0].Prompt)-1].Content, "capital of Greece") || ev[0].Answer != "Athens" {
		t.Errorf("capitals eval[0] = %+v", ev[0])
	}

	// A second init refuses, writing nothing; --force overwrites.
	os.WriteFile("AGENTS.md", []byte("mine"), 0o644)
	if _, err := Write(".", false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("overwrite without force: %v", err)
	}
	if b, _ := os.ReadFile("AGENTS.md"); string(b) != "mine" {
		t.Error("a refused init changed AGENTS.md")
	}
	if _, err := Write(".", true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile("AGENTS.md"); string(b) == "mine" {
		t.Error("--force did not overwrite AGENTS.md")
	}
}
