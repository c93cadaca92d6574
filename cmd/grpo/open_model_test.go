package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
)

// opensModel lists the commands that open a model for use, each with the
// arguments that make it open model (a directory) with env (a custom
// environment directory) and with runDir as its output; work is a scratch
// directory for its config files.
var opensModel = map[string]func(t *testing.T, model, env, work string) [][]string{
	"generate": func(t *testing.T, model, env, work string) [][]string {
		return [][]string{{"generate", "--model", model, "--prompt", "abc", "--max-tokens", "2"}}
	},
	"logprobs": func(t *testing.T, model, env, work string) [][]string {
		return [][]string{
			{"logprobs", "--model", model, "--ids", "1,2"},
			{"logprobs", "--model", model, "--prompt", "a", "--completion", "b"},
		}
	},
	"serve": func(t *testing.T, model, env, work string) [][]string {
		// A host not on this machine: a serve that opened the model
		// anyway fails to listen rather than serve forever.
		return [][]string{{"serve", model, "--host", "192.0.2.1", "--port", "0"}}
	},
	"bench": func(t *testing.T, model, env, work string) [][]string {
		return [][]string{{"bench", "--model", model, "--prefill", "2", "--decode", "1", "--batch", "1", "--repeat", "1"}}
	},
	"train": func(t *testing.T, model, env, work string) [][]string {
		cfg := writeFile(t, work, "train.toml", fmt.Sprintf("model = %q\nmax_steps = 1\nbatch_size = 2\nrollouts_per_example = 2\n[sampling]\nmax_tokens = 2\n[[env]]\nid = %q\n", model, env))
		return [][]string{{"train", cfg, "--output", filepath.Join(work, "train-run")}}
	},
	"eval": func(t *testing.T, model, env, work string) [][]string {
		return [][]string{{"eval", env, "-m", model, "-n", "1", "-r", "1", "--max-tokens", "2"}}
	},
	"gepa": func(t *testing.T, model, env, work string) [][]string {
		cfg := writeFile(t, work, "gepa.toml", fmt.Sprintf("model = %q\nreflection_model = %q\nenv_id = %q\n[gepa]\nmax_calls = 2\nnum_train = 2\nnum_val = 2\nminibatch_size = 1\n[sampling]\nmax_tokens = 2\n", model, model, env))
		return [][]string{{"gepa", "run", cfg, "--output", filepath.Join(work, "gepa-run"), "--quiet"}}
	},
}

// opensNoModel are the other commands, each with why it opens no model.
var opensNoModel = map[string]string{
	"download": "fetches files into the hub cache",
	"env":      "lists, shows, installs and scores environments; rubrics run without a local model",
	"estimate": "reads a model's shape (config.json) and, for the warm-up, times local weights it never uses",
	"init":     "writes a workspace",
	"merge":    "checks an adapter against the model's shapes and merges weights file by file",
	"models":   "lists architectures and shapes",
	"runs":     "reads run directories",
	"tokenize": "reads the tokenizer alone",
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCommandsOpenModelsThroughLoader: every command is listed as opening
// a model or not, and each that does refuses a tokenizer larger than the
// model's vocabulary with the loader's one error line — the check lives
// only in loader.Open, and loader's TestNothingBypassesOpen fails on any
// file that opens a model another way.
func TestCommandsOpenModelsThroughLoader(t *testing.T) {
	var unlisted []string
	for name := range commands {
		_, opens := opensModel[name]
		_, not := opensNoModel[name]
		if opens == not {
			unlisted = append(unlisted, name)
		}
	}
	for name := range opensModel {
		if commands[name] == nil {
			unlisted = append(unlisted, name+" (no such command)")
		}
	}
	for name := range opensNoModel {
		if commands[name] == nil {
			unlisted = append(unlisted, name+" (no such command)")
		}
	}
	if len(unlisted) > 0 {
		sort.Strings(unlisted)
		t.Fatalf("commands in neither list (or in both, or gone): %v; add each to opensModel or opensNoModel", unlisted)
	}
	work := t.TempDir()
	model := filepath.Join(work, "mismatch")
	if err := tinymodel.WriteVocabMismatch(model, filepath.Join("..", "..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(work, "env")
	if err := tinymodel.WriteReverseEnv(env, 4); err != nil {
		t.Fatal(err)
	}
	const refusal = "the tokenizer has 513 tokens but the model's vocab_size is 512; they do not belong together"
	loaderLine := fmt.Sprintf("model = %q: %s", model, refusal)
	var names []string
	for name := range opensModel {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, args := range opensModel[name](t, model, env, work) {
			t.Run(strings.Join(args[:min(len(args), 4)], " "), func(t *testing.T) {
				code, stdout, stderr := runCLIQuiet(t, args...)
				if code == 0 {
					t.Fatalf("exit 0 on a mismatched model; stdout %q", stdout)
				}
				// Warnings (OPENBLAS_CORETYPE's on a machine that sets it)
				// are not the refusal: the refusal must be one line.
				var kept []string
				for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
					if !strings.HasPrefix(l, "warning: ") {
						kept = append(kept, l)
					}
				}
				line := strings.Join(kept, "\n")
				switch _, own := checksOnItsOwn[name]; {
				case strings.Contains(line, "\n"):
					t.Errorf("exit %d; stderr is several lines:\n%s", code, stderr)
				case own && strings.HasSuffix(line, loaderLine):
					t.Errorf("%s now refuses through the loader; drop it from checksOnItsOwn", name)
				case own && !strings.HasSuffix(line, refusal):
					t.Errorf("exit %d; stderr %q does not end in the refusal %q", code, line, refusal)
				case !own && !strings.HasSuffix(line, loaderLine):
					t.Errorf("exit %d; stderr %q does not end in the loader's refusal %q", code, line, loaderLine)
				}
			})
		}
	}
}

// checksOnItsOwn are the commands whose model is still opened outside the
// loader (allowed for now in loader's TestNothingBypassesOpen), with their
// own vocabulary check.
var checksOnItsOwn = map[string]string{}
