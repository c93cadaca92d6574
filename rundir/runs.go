package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Run states as `grpo runs` reports them.
const (
	Running     = "running"
	Finished    = "finished"
	Interrupted = "interrupted"
	Failed      = "failed"
)

// RunningWindow is how recently a run must have written log.txt or
// metrics.jsonl to count as running: a step of a large model takes a
// minute or so, and a run that has been silent for longer was killed.
const RunningWindow = 2 * time.Minute

// Info is what a run directory says about its run.
type Info struct {
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
	// Status is Running, Finished, Interrupted or Failed;
	// Detail says why (the log's last line, or that the run went silent).
	Status, Detail string
	// Modified is when the run last wrote its log or metrics.
	Modified time.Time
}

// Is reports whether dir looks like a run directory (grpo train
// writes config.toml and log.txt first).
func Is(dir string) bool {
	for _, name := range []string{"config.toml", "log.txt", "metrics.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// List inspects every run directory directly under dir, newest first.
// A missing dir is an empty list.
func List(dir string, now time.Time, read ConfigReader) ([]Info, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() || !Is(p) {
			continue
		}
		info, err := Inspect(p, now, read)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Modified.After(out[j].Modified) })
	return out, nil
}

// Inspect reads one run directory: its progress, latest rewards and
// status. The status comes from log.txt's last line (the trainer ends
// every run with "finished …", "interrupted …" or "error: …"), whether
// adapter/ exists, and how recently the run wrote anything. MaxSteps
// comes from the run's config.toml through read.
func Inspect(path string, now time.Time, read ConfigReader) (Info, error) {
	info := Info{Name: filepath.Base(path), Path: path}
	if !Is(path) {
		return info, fmt.Errorf("%s is not a run directory (no config.toml, log.txt or metrics.jsonl); give a directory under runs/ (see grpo runs list)", path)
	}
	if cfg, err := read(filepath.Join(path, "config.toml")); err == nil {
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
	// A GEPA run (package gepa keeps gepa_state.json) ends with its prompt
	// in system_prompt.txt, not with an adapter.
	result := dirExists(filepath.Join(path, "adapter")) || fileExists(filepath.Join(path, "gepa_state.json")) && fileExists(filepath.Join(path, "system_prompt.txt"))
	info.Status, info.Detail = runStatus(last, result, now.Sub(info.Modified))
	return info, nil
}

// runStatus decides a run's state from its log's last message (without the
// timestamp), whether the final adapter exists and how long the run has
// been silent.
func runStatus(last string, hasAdapter bool, silent time.Duration) (status, detail string) {
	switch {
	case strings.HasPrefix(last, "finished") && hasAdapter:
		return Finished, last
	case strings.HasPrefix(last, "finished"):
		return Failed, "the log says finished but adapter/ is missing"
	case strings.HasPrefix(last, "interrupted"):
		return Interrupted, last
	case strings.HasPrefix(last, "error:"):
		return Failed, last
	case silent <= RunningWindow:
		return Running, last
	}
	return Interrupted, fmt.Sprintf("silent for %s with no final log line (killed?); resume it with grpo train --resume", silent.Round(time.Second))
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

// logMessage strips Dir.Logf's timestamp from a log line.
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
