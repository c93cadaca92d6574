package trainer

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// RunDir is a run's directory:
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
type RunDir struct {
	Path string
	log  *os.File
}

// DefaultRunPath is runs/<name>-<yyyymmdd-hhmmss>.
func DefaultRunPath(name string, now time.Time) string {
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

// CreateRunDir makes a new run directory; it refuses one that already holds
// a run (resume it instead).
func CreateRunDir(path string) (*RunDir, error) {
	if _, err := os.Stat(filepath.Join(path, "metrics.jsonl")); err == nil {
		return nil, fmt.Errorf("%s already holds a run; resume it with 'grpo train --resume %s' or choose another --output", path, path)
	}
	if err := os.MkdirAll(filepath.Join(path, "checkpoints"), 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return openRunDir(path)
}

// OpenRunDir opens an existing run directory for resuming.
func OpenRunDir(path string) (*RunDir, error) {
	if _, err := os.Stat(filepath.Join(path, "config.toml")); err != nil {
		return nil, fmt.Errorf("%s is not a run directory (no config.toml); give the --output directory of an earlier 'grpo train'", path)
	}
	return openRunDir(path)
}

func openRunDir(path string) (*RunDir, error) {
	f, err := os.OpenFile(filepath.Join(path, "log.txt"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return &RunDir{Path: path, log: f}, nil
}

// Close closes the log.
func (r *RunDir) Close() error { return r.log.Close() }

// Logf appends a timestamped line to log.txt.
func (r *RunDir) Logf(format string, args ...any) {
	fmt.Fprintf(r.log, "%s %s\n", time.Now().Format("2006-01-02 15:04:05"), fmt.Sprintf(format, args...))
}

// AppendJSONL appends one JSON object as a line to name (metrics.jsonl,
// eval.jsonl) and syncs it, so a killed run keeps every finished step.
func (r *RunDir) AppendJSONL(name string, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(r.Path, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadJSONL reads the objects of a JSONL file of the run; a missing file is
// empty. A torn last line (a crash mid-write) is ignored.
func ReadJSONL(path string) ([]map[string]any, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

// TruncateAfter drops the lines of a JSONL file whose "step" is beyond step:
// on resume, steps after the checkpoint are recomputed and logged again.
func (r *RunDir) TruncateAfter(name string, step int) error {
	path := filepath.Join(r.Path, name)
	rows, err := ReadJSONL(path)
	if err != nil || rows == nil {
		return err
	}
	var b strings.Builder
	for _, row := range rows {
		if s, ok := row["step"].(float64); ok && int(s) > step {
			continue
		}
		line, _ := json.Marshal(row)
		b.Write(line)
		b.WriteByte('\n')
	}
	return atomicfile.WriteFile(path, []byte(b.String()), 0o644)
}

// listCheckpoints lists the complete checkpoints' steps under dir in
// increasing order. A checkpoint is complete once its directory has been
// renamed into place.
func listCheckpoints(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var steps []int
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), "step-"); ok && e.IsDir() {
			if s, err := strconv.Atoi(n); err == nil {
				steps = append(steps, s)
			}
		}
	}
	sort.Ints(steps)
	return steps, nil
}
