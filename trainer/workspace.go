package trainer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// WorkspaceFile is one file of a new workspace.
type WorkspaceFile struct {
	// Path is slash-separated, relative to the workspace.
	Path string
	Data string
}

// WorkspaceFiles lists the files grpo init writes: training configs
// (configs/rl), eval configs (configs/eval), a GEPA config in Prime's
// format (configs/gepa), an example custom environment (environments/)
// and AGENTS.md.
func WorkspaceFiles() []WorkspaceFile {
	return append([]WorkspaceFile(nil), workspaceFiles...)
}

// WriteWorkspace writes the workspace files under dir and returns their
// paths. Unless force is set it refuses, before writing anything, when any
// of them exists already.
func WriteWorkspace(dir string, force bool) ([]string, error) {
	var exist []string
	for _, f := range workspaceFiles {
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
	for _, f := range workspaceFiles {
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
