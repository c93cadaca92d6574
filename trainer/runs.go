package trainer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/grpo-dev/grpo/config"
)

// Run states as `grpo runs` reports them.
const (
	RunRunning     = "running"
	RunFinished    = "finished"
	RunInterrupted = "interrupted"
	RunFailed      = "failed"
)

// RunningWindow is how recently a run must have written log.txt or
// metrics.jsonl to count as running: a step of a large model takes a
// minute or so, and a run that has been silent for longer was killed.
const RunningWindow = 2 * time.Minute

// RunInfo is what a run directory says about its run.
type RunInfo struct {
	Name, Path string
	// Steps is the number of steps in metrics.jsonl; MaxSteps comes from
	// the run's config.toml (0 when it cannot be read).
	Steps, MaxSteps int
	// LastReward is the last step's reward; HasReward is false before the
	// first step.
	LastReward float64
	HasReward  bool
	// LastEvalReward is the reward of the newest evaluation (eval.jsonl).
	LastEvalReward float64
	EvalStep       int
	HasEval        bool
	// Status is RunRunning, RunFinished, RunInterrupted or RunFailed;
	// Detail says why (the log's last line, or that the run went silent).
	Status, Detail string
	// Modified is when the run last wrote its log or metrics.
	Modified time.Time
}

// IsRunDir reports whether dir looks like a run directory (grpo train
// writes config.toml and log.txt first).
func IsRunDir(dir string) bool {
	for _, name := range []string{"config.toml", "log.txt", "metrics.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// ListRuns inspects every run directory directly under dir, newest first.
// A missing dir is an empty list.
func ListRuns(dir string, now time.Time) ([]RunInfo, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []RunInfo
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() || !IsRunDir(p) {
			continue
		}
		info, err := InspectRun(p, now)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Modified.After(out[j].Modified) })
	return out, nil
}

// InspectRun reads one run directory: its progress, latest rewards and
// status. The status comes from log.txt's last line (the trainer ends
// every run with "finished …", "interrupted …" or "error: …"), whether
// adapter/ exists, and how recently the run wrote anything.
func InspectRun(path string, now time.Time) (RunInfo, error) {
	info := RunInfo{Name: filepath.Base(path), Path: path}
	if !IsRunDir(path) {
		return info, fmt.Errorf("%s is not a run directory (no config.toml, log.txt or metrics.jsonl); give a directory under runs/ (see grpo runs list)", path)
	}
	if cfg, err := config.Load(filepath.Join(path, "config.toml")); err == nil {
		info.MaxSteps = cfg.MaxSteps
	}
	rows, err := ReadJSONL(filepath.Join(path, "metrics.jsonl"))
	if err != nil {
		return info, err
	}
	info.Steps = len(rows)
	if n := len(rows); n > 0 {
		info.LastReward, info.HasReward = rows[n-1]["reward"].(float64)
	}
	evals, err := ReadJSONL(filepath.Join(path, "eval.jsonl"))
	if err != nil {
		return info, err
	}
	if n := len(evals); n > 0 {
		info.LastEvalReward, info.HasEval = evals[n-1]["reward"].(float64)
		if s, ok := evals[n-1]["step"].(float64); ok {
			info.EvalStep = int(s)
		}
	}
	for _, name := range []string{"log.txt", "metrics.jsonl", "eval.jsonl"} {
		if st, err := os.Stat(filepath.Join(path, name)); err == nil && st.ModTime().After(info.Modified) {
			info.Modified = st.ModTime()
		}
	}
	last, err := lastLogLine(filepath.Join(path, "log.txt"))
	if err != nil {
		return info, err
	}
	info.Status, info.Detail = runStatus(last, dirExists(filepath.Join(path, "adapter")), now.Sub(info.Modified))
	return info, nil
}

// runStatus decides a run's state from its log's last message (without the
// timestamp), whether the final adapter exists and how long the run has
// been silent.
func runStatus(last string, hasAdapter bool, silent time.Duration) (status, detail string) {
	switch {
	case strings.HasPrefix(last, "finished") && hasAdapter:
		return RunFinished, last
	case strings.HasPrefix(last, "finished"):
		return RunFailed, "the log says finished but adapter/ is missing"
	case strings.HasPrefix(last, "interrupted"):
		return RunInterrupted, last
	case strings.HasPrefix(last, "error:"):
		return RunFailed, last
	case silent <= RunningWindow:
		return RunRunning, last
	}
	return RunInterrupted, fmt.Sprintf("silent for %s with no final log line (killed?); resume it with grpo train --resume", silent.Round(time.Second))
}

// terminalLine reports whether a log message ends a run.
func terminalLine(msg string) bool {
	return strings.HasPrefix(msg, "finished") || strings.HasPrefix(msg, "interrupted") || strings.HasPrefix(msg, "error:")
}

// lastLogLine is the message of log.txt's last non-empty line, without the
// "2006-01-02 15:04:05 " timestamp; "" for a missing or empty log.
func lastLogLine(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return logMessage(lines[len(lines)-1]), nil
}

// logMessage strips RunDir.Logf's timestamp from a log line.
func logMessage(line string) string {
	const stamp = "2006-01-02 15:04:05 "
	if len(line) >= len(stamp) {
		if _, err := time.Parse("2006-01-02 15:04:05", line[:len(stamp)-1]); err == nil {
			return line[len(stamp):]
		}
	}
	return line
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// RunDetail is InspectRun plus what `grpo runs status` shows.
type RunDetail struct {
	RunInfo
	// Config is the run's config.toml, nil when it does not parse
	// (ConfigErr says why).
	Config    *config.Config
	ConfigErr error
	// Summary holds the first and last 10% rewards (valid when Steps > 0).
	Summary RunSummary
	// Latest is the last step's metrics.
	Latest map[string]float64
	// Checkpoints are the complete checkpoints' steps.
	Checkpoints []int
	// Adapter and Plot are paths, "" when the run has not written them.
	Adapter, Plot string
}

// InspectRunDetail reads everything `grpo runs status` shows.
func InspectRunDetail(path string, now time.Time) (RunDetail, error) {
	info, err := InspectRun(path, now)
	if err != nil {
		return RunDetail{}, err
	}
	d := RunDetail{RunInfo: info, Latest: map[string]float64{}}
	d.Config, d.ConfigErr = config.Load(filepath.Join(path, "config.toml"))
	ckDir := "checkpoints"
	if d.Config != nil {
		ckDir = d.Config.Checkpoint.Dir
	}
	if d.Checkpoints, err = listCheckpoints(filepath.Join(path, ckDir)); err != nil {
		return d, err
	}
	if info.Steps > 0 {
		if d.Summary, err = Summarize(path); err != nil {
			return d, err
		}
		rows, err := ReadJSONL(filepath.Join(path, "metrics.jsonl"))
		if err != nil {
			return d, err
		}
		for k, v := range rows[len(rows)-1] {
			if f, ok := v.(float64); ok {
				d.Latest[k] = f
			}
		}
	}
	if p := filepath.Join(path, "adapter"); dirExists(p) {
		d.Adapter = p
	}
	if p := filepath.Join(path, "rewards.png"); fileExists(p) {
		d.Plot = p
	}
	return d, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

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
