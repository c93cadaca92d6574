package rundir

import (
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
//	checkpoints/step-N/  adapter/, optimizer.safetensors, state.json
//	adapter/             the final PEFT adapter
//	rewards.png          reward and eval curves
//
// Files that must survive a crash whole (checkpoints, the adapter, the
// config) are written through internal/atomicfile; the JSONL files are
// appended to and fsynced line by line.
type Dir struct {
	Path string
	log  *os.File
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

// Create makes a new run directory; it refuses one that already holds
// a run (resume it instead).
func Create(path string) (*Dir, error) {
	if _, err := os.Stat(filepath.Join(path, "metrics.jsonl")); err == nil {
		return nil, fmt.Errorf("%s already holds a run; resume it with 'grpo train --resume %s' or choose another --output", path, path)
	}
	if err := os.MkdirAll(filepath.Join(path, "checkpoints"), 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return openLog(path)
}

// Open opens an existing run directory for resuming.
func Open(path string) (*Dir, error) {
	if _, err := os.Stat(filepath.Join(path, "config.toml")); err != nil {
		return nil, fmt.Errorf("%s is not a run directory (no config.toml); give the --output directory of an earlier 'grpo train'", path)
	}
	return openLog(path)
}

func openLog(path string) (*Dir, error) {
	f, err := os.OpenFile(filepath.Join(path, "log.txt"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return &Dir{Path: path, log: f}, nil
}

// Close closes the log.
func (r *Dir) Close() error { return r.log.Close() }

// Logf appends a timestamped line to log.txt.
func (r *Dir) Logf(format string, args ...any) {
	fmt.Fprintf(r.log, "%s %s\n", time.Now().Format("2006-01-02 15:04:05"), fmt.Sprintf(format, args...))
}
