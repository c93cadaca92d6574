// Package examples embeds the example files the grpo binary writes out, so
// that each exists once, as a real file in the repository: Workspace is
// the tree `grpo init` writes (workspace/: what `prime lab setup` writes
// today, LAB_FILES.md says from where), LegacyConfigs the per-environment
// configs of verifiers 8d4b33247 (`grpo init --legacy-configs`). The Lab
// configs in configs/ and demo.toml are files to point grpo at, read from
// disk, not embedded; configs/ stays a set of its own because config tests
// pin its values (hosted-only keys and aliases that the setup files do not
// use).
package examples

import (
	"embed"
	"io/fs"
)

// all: keeps workspace/.prime (the Lab's skills), which a plain pattern
// skips as a dot-directory.
//
//go:embed all:workspace legacy lab.gitignore
var files embed.FS

// Workspace is the files of a new workspace, at the paths grpo init
// writes them to (configs/rl/qwen.toml, AGENTS.md, ...).
func Workspace() fs.FS { return sub("workspace") }

// LegacyConfigs is the per-environment configs (configs/rl/gsm8k.toml,
// ...), at the paths grpo init --legacy-configs writes them to.
func LegacyConfigs() fs.FS { return sub("legacy") }

// GitIgnore is the workspace's .gitignore patterns, one a line.
func GitIgnore() string {
	b, err := files.ReadFile("lab.gitignore")
	if err != nil {
		panic(err) // embedded above: cannot fail
	}
	return string(b)
}

func sub(dir string) fs.FS {
	s, err := fs.Sub(files, dir)
	if err != nil {
		panic(err) // an embedded directory: fs.Sub cannot fail on it
	}
	return s
}
