package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/examples"
	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// File is one file of a new workspace.
type File struct {
	// Path is slash-separated, relative to the workspace.
	Path string
	Data string
}

// Options choose what Write writes beyond the default workspace.
type Options struct {
	// Force overwrites workspace files that exist already.
	Force bool
	// LegacyConfigs adds the per-environment configs of verifiers
	// 8d4b33247 (configs/rl/gsm8k.toml, configs/eval/minimal.toml, ...).
	LegacyConfigs bool
}

// Files lists the files grpo init writes, in the order it writes and
// lists them: configs first, the Lab's skills last. By default they are
// what `prime lab setup` writes today (examples/LAB_FILES.md lists each
// with its source): the model-family configs configs/{rl,eval,gepa}/
// (qwen, qwen-moe, llama, nemotron, gpt-oss) as verifiers a60a606 has
// them, AGENTS.md, CLAUDE.md, environments/AGENTS.md and the skills under
// .prime/skills/; then grpo's own: configs/endpoints.toml, AGENTS.local.md
// (grpo's guidance, the file the Lab's AGENTS.md sends agents to next) and
// an example custom environment (environments/capitals). The .gitignore is
// not among them: Write merges it (GitIgnore).
func Files(legacy bool) []File {
	files := collect(examples.Workspace())
	if legacy {
		files = append(files, collect(examples.LegacyConfigs())...)
	}
	sort.SliceStable(files, func(i, j int) bool { return rank(files[i].Path) < rank(files[j].Path) })
	return files
}

// rank orders the listing: what a user runs first, what agents read last.
func rank(p string) int {
	for i, prefix := range []string{"configs/rl/", "configs/eval/", "configs/gepa/", "configs/", "environments/"} {
		if strings.HasPrefix(p, prefix) {
			return i
		}
	}
	if strings.HasPrefix(p, ".prime/") {
		return 6
	}
	return 5 // top-level guidance
}

func collect(fsys fs.FS) []File {
	var files []File
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		files = append(files, File{Path: p, Data: string(data)})
		return err
	})
	if err != nil {
		panic(err) // an embedded tree cannot fail to read
	}
	return files
}

// GitIgnore is the .gitignore Write leaves in a workspace that had
// existing (its text, "" for none): existing with the patterns of
// examples.GitIgnore it lacks appended under their comments, as
// `prime lab setup` appends its own; existing itself when it lacks none.
func GitIgnore(existing string) string {
	have := map[string]bool{}
	for _, line := range strings.Split(existing, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			have[l] = true
		}
	}
	var add []string
	missing := false
	for _, line := range strings.Split(strings.TrimRight(examples.GitIgnore(), "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			add = append(add, line)
		} else if !have[line] {
			add, missing = append(add, line), true
		}
	}
	if !missing {
		return existing
	}
	// Drop comments left heading no pattern.
	var keep []string
	for i, line := range add {
		if strings.HasPrefix(line, "#") && (i+1 == len(add) || strings.HasPrefix(add[i+1], "#")) {
			continue
		}
		keep = append(keep, line)
	}
	if existing = strings.TrimRight(existing, "\n"); existing != "" {
		existing += "\n\n"
	}
	return existing + strings.Join(keep, "\n") + "\n"
}

// Write writes the workspace files under dir and merges its .gitignore,
// returning the paths written. Unless o.Force is set it refuses, before
// writing anything, when any of the files exists already (the .gitignore
// is merged, never refused).
func Write(dir string, o Options) ([]string, error) {
	files := Files(o.LegacyConfigs)
	var exist []string
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if _, err := os.Stat(p); err == nil {
			exist = append(exist, p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if len(exist) > 0 && !o.Force {
		more := ""
		if len(exist) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(exist)-1)
		}
		return nil, fmt.Errorf("%s exists%s; nothing was written: use --force to overwrite, or init another directory", exist[0], more)
	}
	ignore := filepath.Join(dir, ".gitignore")
	old, err := os.ReadFile(ignore)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if merged := GitIgnore(string(old)); merged != string(old) || err != nil {
		files = append(files, File{Path: ".gitignore", Data: merged})
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
