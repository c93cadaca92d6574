package rundir

import (
	"fmt"
	"path/filepath"
)

// Summary condenses a run directory's metrics.
type Summary struct {
	Steps int
	// FirstReward and LastReward are the mean rewards of the first and last
	// 10% of steps (at least one step each).
	FirstReward, LastReward float64
	HasEval                 bool
	EvalStep                int
	EvalReward              float64
}

// Summarize reads a run directory's metrics.jsonl and eval.jsonl.
func Summarize(runDir string) (Summary, error) {
	var s Summary
	rows, err := ReadJSONL(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		return s, err
	}
	if len(rows) == 0 {
		return s, fmt.Errorf("%s: no steps in metrics.jsonl yet", runDir)
	}
	var rewards []float64
	for _, r := range rows {
		if v, ok := r["reward"].(float64); ok {
			rewards = append(rewards, v)
		}
	}
	s.Steps = len(rows)
	k := max(1, len(rewards)/10)
	s.FirstReward, s.LastReward = mean(rewards[:k]), mean(rewards[len(rewards)-k:])
	evals, err := ReadJSONL(filepath.Join(runDir, "eval.jsonl"))
	if err != nil {
		return s, err
	}
	if n := len(evals); n > 0 {
		s.HasEval = true
		if v, ok := evals[n-1]["step"].(float64); ok {
			s.EvalStep = int(v)
		}
		s.EvalReward, _ = evals[n-1]["reward"].(float64)
	}
	return s, nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}
