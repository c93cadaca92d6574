// Package health watches a training run's rewards for the failure modes
// of Prime Intellect Lab's troubleshooting guide and turns them into one
// warning each; its State is checkpointed with the run.
package health

import "fmt"

// StuckSteps is how many consecutive steps of a flat reward trigger a
// warning.
const StuckSteps = 5

// State watches for the failure modes of Prime Intellect Lab's
// troubleshooting guide and turns them into one warning each.
type State struct {
	AllZero, AllOne, NoSignal int  // consecutive steps
	WarnedZero, WarnedOne     bool // each warning is given once
	WarnedNoSignal            bool
	// ErrorSteps counts consecutive steps in which every rollout failed
	// (max_error_steps stops the run).
	ErrorSteps int
}

// Observe updates the counters with one step's rewards and returns the
// warnings that fire now.
func (h *State) Observe(rewards []float32, fracZeroStd float64) []string {
	zero, one := true, true
	for _, r := range rewards {
		zero = zero && r == 0
		one = one && r == 1
	}
	h.AllZero, h.AllOne = Bump(h.AllZero, zero), Bump(h.AllOne, one)
	h.NoSignal = Bump(h.NoSignal, fracZeroStd == 1)
	var warn []string
	if h.AllZero >= StuckSteps && !h.WarnedZero {
		h.WarnedZero = true
		warn = append(warn, fmt.Sprintf("reward has been 0.0 for every rollout of the last %d steps: nothing to learn from. Check that the model can produce the environment's answer format (grpo eval ENV -m MODEL -n 5 shows completions), raise [sampling] max_tokens if completions are cut off, or start from a stronger model", StuckSteps))
	}
	if h.AllOne >= StuckSteps && !h.WarnedOne {
		h.WarnedOne = true
		warn = append(warn, fmt.Sprintf("reward has been 1.0 for every rollout of the last %d steps: the task is solved and gives no learning signal. Use harder environment args or a harder environment", StuckSteps))
	}
	if h.NoSignal >= StuckSteps && !h.WarnedNoSignal && !zero && !one {
		h.WarnedNoSignal = true
		warn = append(warn, fmt.Sprintf("every group's rollouts got equal rewards for %d steps, so all advantages are 0: raise rollouts_per_example or [sampling] temperature", StuckSteps))
	}
	return warn
}

// Bump counts one more consecutive step where cond holds, or restarts
// the count at 0.
func Bump(n int, cond bool) int {
	if cond {
		return n + 1
	}
	return 0
}
