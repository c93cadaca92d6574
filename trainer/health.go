package trainer

import "fmt"

// stuckSteps is how many consecutive steps of a flat reward trigger a
// warning.
const stuckSteps = 5

// healthState watches for the failure modes of Prime Intellect Lab's
// troubleshooting guide and turns them into one warning each.
type healthState struct {
	AllZero, AllOne, NoSignal int  // consecutive steps
	WarnedZero, WarnedOne     bool // each warning is given once
	WarnedNoSignal            bool
	// ErrorSteps counts consecutive steps in which every rollout failed
	// (max_error_steps stops the run).
	ErrorSteps int
}

// observe updates the counters with one step's rewards and returns the
// warnings that fire now.
func (h *healthState) observe(rewards []float32, fracZeroStd float64) []string {
	zero, one := true, true
	for _, r := range rewards {
		zero = zero && r == 0
		one = one && r == 1
	}
	h.AllZero, h.AllOne = bump(h.AllZero, zero), bump(h.AllOne, one)
	h.NoSignal = bump(h.NoSignal, fracZeroStd == 1)
	var warn []string
	if h.AllZero >= stuckSteps && !h.WarnedZero {
		h.WarnedZero = true
		warn = append(warn, fmt.Sprintf("reward has been 0.0 for every rollout of the last %d steps: nothing to learn from. Check that the model can produce the environment's answer format (grpo eval ENV -m MODEL -n 5 shows completions), raise [sampling] max_tokens if completions are cut off, or start from a stronger model", stuckSteps))
	}
	if h.AllOne >= stuckSteps && !h.WarnedOne {
		h.WarnedOne = true
		warn = append(warn, fmt.Sprintf("reward has been 1.0 for every rollout of the last %d steps: the task is solved and gives no learning signal. Use harder environment args or a harder environment", stuckSteps))
	}
	if h.NoSignal >= stuckSteps && !h.WarnedNoSignal && !zero && !one {
		h.WarnedNoSignal = true
		warn = append(warn, fmt.Sprintf("every group's rollouts got equal rewards for %d steps, so all advantages are 0: raise rollouts_per_example or [sampling] temperature", stuckSteps))
	}
	return warn
}

func bump(n int, cond bool) int {
	if cond {
		return n + 1
	}
	return 0
}
