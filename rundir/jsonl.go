package rundir

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// AppendJSONL appends one JSON object as a line to name (metrics.jsonl,
// eval.jsonl) and syncs it, so a killed run keeps every finished step.
func (r *Dir) AppendJSONL(name string, v any) error {
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
func (r *Dir) TruncateAfter(name string, step int) error {
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
