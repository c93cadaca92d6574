package config

import (
	"path/filepath"
	"strings"
)

// checkpointDirProblem says why a [checkpoint] dir would not stay inside
// the run directory, or "" if it does. Checkpoints belong to their run:
// `grpo runs`, --resume and keep_last pruning look for them there, and a
// dir outside it would let two runs prune each other's checkpoints.
func checkpointDirProblem(dir string) string {
	// Both separators count: a config written on Windows is read here too.
	norm := strings.ReplaceAll(dir, `\`, "/")
	if filepath.IsAbs(dir) || strings.HasPrefix(norm, "/") || filepath.VolumeName(dir) != "" {
		return `an absolute path; checkpoints live inside the run directory, so give a path relative to it, e.g. dir = "checkpoints"`
	}
	clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(norm)))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return `leaves the run directory through ".."; checkpoints live inside it, so give a path below it, e.g. dir = "checkpoints"`
	}
	return ""
}
