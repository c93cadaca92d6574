package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/examples"
	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// File is one file of a new workspace.
type File struct {
	// Path is slash-separated, relative to the workspace.
	Path string
	Data string
}

// order is the order grpo init writes and lists the files in: training
// configs first, AGENTS.md last. It names every embedded file (a test
// holds it to the embedded tree).
var order = []string{
	"configs/endpoints.toml",
	"configs/rl/alphabet-sort.toml",
	"configs/rl/gsm8k.toml",
	"configs/rl/math-python.toml",
	"configs/rl/reverse-text.toml",
	"configs/rl/wiki-search.toml",
	"configs/rl/wordle.toml",
	"configs/eval/minimal.toml",
	"configs/eval/multi-env.toml",
	"configs/gepa/base.toml",
	"configs/gepa/wordle.toml",
	"environments/AGENTS.md",
	"environments/capitals/environment.toml",
	"environments/capitals/data/train.jsonl",
	"environments/capitals/data/eval.jsonl",
	"AGENTS.md",
}

// Files lists the files grpo init writes: those `prime lab setup` writes
// at verifiers 8d4b33247 (configs/endpoints.toml, configs/rl/*.toml for
// alphabet-sort, gsm8k, math-python, reverse-text, wiki-search and wordle,
// configs/eval/{minimal,multi-env}.toml, configs/gepa/{base,wordle}.toml,
// environments/AGENTS.md, AGENTS.md), in the Lab's layout and keys so they
// run unchanged on either side, with models sized for one local GPU; and
// an example custom environment (environments/capitals).
func Files() []File {
	files := make([]File, len(order))
	for i, p := range order {
		data, err := fs.ReadFile(examples.Workspace(), p)
		if err != nil {
			panic(err) // order names a file that is not embedded: TestWorkspace fails
		}
		files[i] = File{Path: p, Data: string(data)}
	}
	return files
}

// Write writes the workspace files under dir and returns their paths.
// Unless force is set it refuses, before writing anything, when any of
// them exists already.
func Write(dir string, force bool) ([]string, error) {
	files := Files()
	var exist []string
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if _, err := os.Stat(p); err == nil {
			exist = append(exist, p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if len(exist) > 0 && !force {
		more := ""
		if len(exist) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(exist)-1)
		}
		return nil, fmt.Errorf("%s exists%s; nothing was written: use --force to overwrite, or init another directory", exist[0], more)
	}
	var written []string
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return written, err
		}
		if err := atomicfile.WriteFile(p, []byte(f.Data), 0o644); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}
