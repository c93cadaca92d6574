package eval

import (
	"fmt"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/model"
)

// checkFits refuses, before any rollout, an evaluation whose estimate
// (one pass's sampler plus the results held: every rollout's, or one
// pass's when they stream to a file in resultsDir) exceeds the free memory
// of its device, or whose streamed results would not fit on resultsDir's
// disk, with the numbers and the settings that shrink it. Free space that
// cannot be read leaves that check out.
func checkFits(s config.EvalSpec, m *model.Model, e env.Environment, n, batch int, resultsDir string) error {
	slots, total := passShape(n, s.RolloutsPerExample, batch)
	held := total
	if resultsDir != "" {
		held = slots
	}
	turns := 1
	if tl, ok := e.(env.TurnLimiter); ok {
		turns = max(1, tl.MaxTurns())
	}
	pass := estimate.EvalPass{Name: s.Name, Slots: slots, MaxTokens: s.Sampling.MaxTokens, MaxTurns: turns, Rollouts: held}
	est := estimate.EvalMemory(m.Config, s.Device, pass)
	avail, err := estimate.AvailableMemory(s.Device)
	if err != nil {
		return err
	}
	if avail.Known && est.Peak > avail.Bytes {
		return fmt.Errorf("eval %s: %d examples × %d rollouts need an estimated %s (a KV cache for %d rollouts at once, and %s of results held until written) but %s is free (%s); lower rollouts_per_example (-r), num_examples (-n) or max_tokens (--max-tokens)",
			s.Name, n, max(1, s.RolloutsPerExample), estimate.FormatBytes(est.Peak), slots,
			estimate.FormatBytes(resultsBytes(est)), estimate.FormatBytes(avail.Bytes), avail.Source)
	}
	if resultsDir == "" {
		return nil
	}
	pass.Rollouts = total
	results := resultsBytes(estimate.EvalMemory(m.Config, s.Device, pass))
	disk, err := estimate.AvailableDisk(resultsDir)
	if err != nil {
		return err
	}
	if disk.Known && results > disk.Bytes {
		return fmt.Errorf("eval %s: %d examples × %d rollouts need an estimated %s of disk for their results in %s but %s is free there (%s); lower rollouts_per_example (-r), num_examples (-n) or max_tokens (--max-tokens), or write them elsewhere (--output)",
			s.Name, n, max(1, s.RolloutsPerExample), estimate.FormatBytes(results), resultsDir,
			estimate.FormatBytes(disk.Bytes), disk.Source)
	}
	return nil
}

// resultsBytes is the estimate's item for the results held.
func resultsBytes(est *estimate.Estimate) int64 {
	for _, it := range est.Items {
		if it.Name == estimate.EvalResultsItem {
			return it.Bytes
		}
	}
	return 0
}
