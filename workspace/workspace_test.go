package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	_ "github.com/grpo-dev/grpo/env/builtins"
	"github.com/grpo-dev/grpo/examples"
)

// TestWorkspace writes a workspace and checks that it holds what prime lab
// setup writes and grpo's own files, each as embedded; that every config
// in it parses through grpo's loaders (labconfigs_test.go); that the
// example environment loads; and that a second init refuses to overwrite.
func TestWorkspace(t *testing.T) {
	dir := t.TempDir()
	written, err := Write(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != len(Files(false))+1 {
		t.Errorf("wrote %d files, want %d and .gitignore", len(written), len(Files(false)))
	}
	rel := relPaths(t, dir, written)
	checkEmbedded(t, dir, examples.Workspace(), rel)
	for _, want := range []string{".gitignore", "AGENTS.md", "CLAUDE.md", "AGENTS.local.md", "environments/AGENTS.md",
		"configs/endpoints.toml", "environments/capitals/environment.toml",
		".prime/skills/brainstorm/SKILL.md", ".prime/skills/create-environments/SKILL.md", ".prime/skills/evaluate-environments/SKILL.md",
		".prime/skills/evaluate-environments/references/REFERENCE.md", ".prime/skills/browse-environments/SKILL.md",
		".prime/skills/train-with-environments/SKILL.md"} {
		if !contains(rel, want) {
			t.Errorf("workspace lacks %s", want)
		}
	}
	for _, family := range []string{"rl/qwen", "rl/qwen-moe", "rl/llama", "rl/nemotron", "rl/gpt-oss",
		"eval/qwen-3-5", "eval/qwen-3-5-moe", "eval/llama-3", "eval/nemotron-3", "eval/gpt-oss",
		"gepa/qwen-3-5", "gepa/qwen-3-5-moe", "gepa/llama-3", "gepa/nemotron-3", "gepa/gpt-oss"} {
		if !contains(rel, "configs/"+family+".toml") {
			t.Errorf("workspace lacks configs/%s.toml", family)
		}
	}
	if files := Files(false); files[0].Path != "configs/rl/gpt-oss.toml" || !strings.HasPrefix(files[len(files)-1].Path, ".prime/skills/") || rel[len(rel)-1] != ".gitignore" {
		t.Errorf("listing order: %q first, %q last, then %q", files[0].Path, files[len(files)-1].Path, rel[len(rel)-1])
	}
	t.Chdir(dir) // environments/ of the workspace are found from here
	checkLabConfigs(t, 5, 5, 5)
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

	// A second init refuses, writing nothing; --force overwrites, and
	// leaves the .gitignore as it was (every pattern is there already).
	ignore, _ := os.ReadFile(".gitignore")
	os.WriteFile("AGENTS.md", []byte("mine"), 0o644)
	if _, err := Write(".", Options{}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("overwrite without force: %v", err)
	}
	if b, _ := os.ReadFile("AGENTS.md"); string(b) != "mine" {
		t.Error("a refused init changed AGENTS.md")
	}
	written, err = Write(".", Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile("AGENTS.md"); string(b) == "mine" {
		t.Error("--force did not overwrite AGENTS.md")
	}
	if b, _ := os.ReadFile(".gitignore"); string(b) != string(ignore) || contains(relPaths(t, ".", written), ".gitignore") {
		t.Errorf(".gitignore rewritten by a second init:\n%s", b)
	}
}

// TestLegacyConfigs: --legacy-configs adds verifiers 8d4b33247's
// per-environment configs, which parse and name environments grpo has.
func TestLegacyConfigs(t *testing.T) {
	dir := t.TempDir()
	written, err := Write(dir, Options{LegacyConfigs: true})
	if err != nil {
		t.Fatal(err)
	}
	rel := relPaths(t, dir, written)
	checkEmbedded(t, dir, examples.LegacyConfigs(), rel)
	for _, want := range []string{"configs/rl/gsm8k.toml", "configs/rl/math-python.toml", "configs/eval/minimal.toml", "configs/gepa/wordle.toml", "configs/rl/qwen.toml"} {
		if !contains(rel, want) {
			t.Errorf("legacy workspace lacks %s", want)
		}
	}
	t.Chdir(dir)
	checkLabConfigs(t, 11, 7, 7)
}

// TestGitIgnore: an existing .gitignore keeps its lines and gains the
// patterns it lacks, under their comments, once.
func TestGitIgnore(t *testing.T) {
	got := GitIgnore("node_modules/\n/runs/\n.env\n")
	if !strings.HasPrefix(got, "node_modules/\n/runs/\n.env\n\n# Lab generated artifacts\n/AGENTS.md\n") ||
		strings.Count(got, "/runs/") != 1 || strings.Count(got, ".env\n") != 1 || strings.Contains(got, "# grpo run directories") {
		t.Errorf("merged:\n%s", got)
	}
	if again := GitIgnore(got); again != got {
		t.Errorf("a second merge changed it:\n%s", again)
	}
	fresh := GitIgnore("")
	for _, p := range []string{"/.prime/", "/CLAUDE.md", "/environments/AGENTS.md", "/environments/*/outputs/", "*.py[cod]", "/runs/"} {
		if !strings.Contains(fresh, "\n"+p+"\n") {
			t.Errorf("fresh .gitignore lacks %s:\n%s", p, fresh)
		}
	}
}

func relPaths(t *testing.T, dir string, paths []string) []string {
	t.Helper()
	var rel []string
	for _, p := range paths {
		r, err := filepath.Rel(dir, p)
		if err != nil {
			t.Fatal(err)
		}
		rel = append(rel, filepath.ToSlash(r))
	}
	return rel
}

// checkEmbedded: every file of fsys was written, as it is embedded.
func checkEmbedded(t *testing.T, dir string, fsys fs.FS, rel []string) {
	t.Helper()
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !contains(rel, p) {
			t.Errorf("embedded %s was not written", p)
			return nil
		}
		want, _ := fs.ReadFile(fsys, p)
		if got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p))); err != nil || string(got) != string(want) {
			t.Errorf("%s: written %q (%v), embedded %q", p, got, err, want)
		}
		return nil
	})
}

func contains(xs []string, x string) bool {
	s := append([]string(nil), xs...)
	sort.Strings(s)
	i := sort.SearchStrings(s, x)
	return i < len(s) && s[i] == x
}
