package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Dir is a run's directory:
//
//	config.toml          the resolved config the run uses
//	metrics.jsonl        one JSON object per step
//	eval.jsonl           one JSON object per evaluation
//	log.txt              the human-readable log
//	checkpoints/step-N/  adapter/, optimizer.safetensors, state.json, config.toml,
//	                     checksums.sha256 (of them all, checked at resume)
//	adapter/             the final PEFT adapter
//	rewards.png          reward and eval curves
//	run.lock             held (flock) by the process writing the run; its PID
//
// Files that must survive a crash whole (checkpoints, the adapter, the
// config) are written through internal/atomicfile; the JSONL files are
// appended to and fsynced line by line.
type Dir struct {
	Path string
	log  *os.File
	// lock is the held run.lock: one writer per run directory.
	lock *os.File
}

// DefaultPath is runs/<name>-<yyyymmdd-hhmmss>.
func DefaultPath(name string, now time.Time) string {
	if name == "" {
		name = "run"
	}
	return filepath.Join("runs", sanitizeName(name)+"-"+now.Format("20060102-150405"))
}

func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == ':' {
			return '-'
		}
		return r
	}, s)
}

// Create makes a new run directory and locks it (see Lock); it refuses one
// that already holds a run (resume it instead). The check is made under
// the lock, so two processes started together cannot both pass it.
func Create(path string) (*Dir, error) {
	if err := os.MkdirAll(filepath.Join(path, "checkpoints"), 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	lk, err := lock(path)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"config.toml", "metrics.jsonl"} {
		if _, err := os.Stat(filepath.Join(path, name)); err == nil {
			unlock(lk)
			return nil, fmt.Errorf("%s already holds a run; resume it with 'grpo train --resume %s' or choose another --output", path, path)
		}
	}
	return openLog(path, lk)
}

// Open opens and locks an existing run directory for resuming.
func Open(path string) (*Dir, error) {
	if err := CheckRun(path); err != nil {
		return nil, err
	}
	lk, err := lock(path)
	if err != nil {
		return nil, err
	}
	return openLog(path, lk)
}

// CheckRun says, in one line, why path cannot be resumed: it does not
// exist, or holds no run (no config.toml).
func CheckRun(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: no such run directory; give the --output directory of an earlier 'grpo train' ('grpo runs list' shows them)", path)
	case err != nil:
		return fmt.Errorf("run directory: %w", err)
	case !st.IsDir():
		return fmt.Errorf("%s is a file, not a run directory; give the --output directory of an earlier 'grpo train'", path)
	}
	if _, err := os.Stat(filepath.Join(path, "config.toml")); err != nil {
		return fmt.Errorf("%s is not a run directory (no config.toml); give the --output directory of an earlier 'grpo train'", path)
	}
	return nil
}

func openLog(path string, lk *os.File) (*Dir, error) {
	f, err := os.OpenFile(filepath.Join(path, "log.txt"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		unlock(lk)
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return &Dir{Path: path, log: f, lock: lk}, nil
}

// Close closes the log and releases the directory's lock.
func (r *Dir) Close() error {
	err := r.log.Close()
	if r.lock != nil {
		unlock(r.lock)
		r.lock = nil
	}
	return err
}

// Logf appends a timestamped line to log.txt.
func (r *Dir) Logf(format string, args ...any) {
	fmt.Fprintf(r.log, "%s %s\n", time.Now().Format("2006-01-02 15:04:05"), fmt.Sprintf(format, args...))
}
