// Package examples embeds the example files the grpo binary writes out, so
// that each exists once, as a real file in the repository: Workspace is
// the tree `grpo init` writes (workspace/: the files of `prime lab setup`
// at verifiers 8d4b33247, sized for a local GPU). The Lab configs in
// configs/ and demo.toml are files to point grpo at, read from disk, not
// embedded; configs/ stays a set of its own because config tests pin its
// values (hosted-only keys and aliases that the setup files do not use).
package examples

import (
	"embed"
	"io/fs"
)

//go:embed workspace
var workspace embed.FS

// Workspace is the files of a new workspace, at the paths grpo init
// writes them to (configs/rl/gsm8k.toml, AGENTS.md, ...).
func Workspace() fs.FS {
	sub, err := fs.Sub(workspace, "workspace")
	if err != nil {
		panic(err) // "workspace" is a valid path: fs.Sub cannot fail on it
	}
	return sub
}
