package rundir

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// FollowLog copies the run's log.txt to w and then, polling every poll,
// each line appended to it, until a line ends the run ("finished …",
// "interrupted …", "error: …"), the run has been silent for idle (killed:
// it will never write that line), or ctx is done. A log that does not
// exist yet is waited for.
func FollowLog(ctx context.Context, runPath string, w io.Writer, poll, idle time.Duration) error {
	path := filepath.Join(runPath, "log.txt")
	var offset int64
	var partial []byte // a line written without its newline yet
	lastChange := time.Now()
	for {
		n, done, err := copyNewLines(path, offset, &partial, w)
		if err != nil {
			return err
		}
		if n > 0 {
			offset += n
			lastChange = time.Now()
		}
		if done {
			return nil
		}
		if time.Since(lastChange) > idle {
			_, err := fmt.Fprintf(w, "(no new log lines for %s: the run is not running; resume it with grpo train --resume %s)\n", idle.Round(time.Second), runPath)
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

// copyNewLines writes the complete lines of path after offset to w and
// reports how many bytes it consumed and whether one of them ended the run.
func copyNewLines(path string, offset int64, partial *[]byte, w io.Writer) (int64, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, false, err
	}
	data, err := io.ReadAll(bufio.NewReader(f))
	if err != nil {
		return 0, false, err
	}
	*partial = append(*partial, data...)
	done := false
	for {
		i := bytes.IndexByte(*partial, '\n')
		if i < 0 {
			break
		}
		line := (*partial)[:i+1]
		if _, err := w.Write(line); err != nil {
			return int64(len(data)), false, err
		}
		// Only the last line counts: a resumed run's log goes on after an
		// "interrupted" line.
		done = terminalLine(logMessage(strings.TrimRight(string(line), "\n")))
		*partial = (*partial)[i+1:]
	}
	return int64(len(data)), done, nil
}
