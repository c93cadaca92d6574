package eval

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// StreamRows runs the evals with a sink that writes each pass's
// rows to path as JSONL as soon as the pass ends, so the results never sit
// in memory all at once. The file goes through a temporary one: it appears
// only complete, and not at all when the evals fail before the first row
// (an interrupted or failed eval keeps the rows of the passes it finished).
// err is a problem writing the file (grpo eval names it as --output's);
// runErr the evals' own.
func StreamRows(path string, run func(rows func([]Row) error) ([]Result, error)) (results []Result, runErr, err error) {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
	}
	errNoRows := errors.New("no results")
	written := 0
	err = atomicfile.Write(path, 0o644, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		results, runErr = run(func(rows []Row) error {
			written += len(rows)
			if err := WriteRows(bw, rows); err != nil {
				return err
			}
			return bw.Flush()
		})
		if written == 0 {
			return errNoRows
		}
		return bw.Flush()
	})
	if errors.Is(err, errNoRows) {
		err = nil
	}
	return results, runErr, err
}
