package rundir

import (
	"fmt"
	"os"
)

// Acquire makes path (if need be) and locks it for a writer that keeps its
// own resumable state in it, as a GEPA run does: unlike Create it accepts
// a directory that already holds that writer's files, and unlike Open it
// needs no config.toml there. The lock (see Lock) still keeps a second
// process out.
func Acquire(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	lk, err := lock(path)
	if err != nil {
		return nil, err
	}
	return openLog(path, lk)
}
