package rollout

import (
	"fmt"
	"math"
	"strings"
)

// Summarize is what a training step reports of its trajectories, under
// the trainer's metric names: the reward's mean and spread (of each
// reward as float32, what the loss trains on), each rubric metric's mean
// as reward/NAME, the tool counters' means (tool_calls, tool_errors,
// tool_calls/NAME), tokens/total (prompt and completion), the mean
// completion length, the share of truncated episodes with the limit that
// cut them (truncated/max_tokens, truncated/context), and the episodes'
// error lines. With agent programs' episodes, tokens/total and the
// completion length count every sample, and agent/calls and
// agent/samples are the means of the programs' model calls and of the
// samples they made (prime-rl's num_turns and num_branches).
func Summarize(trajs []Trajectory) map[string]float64 {
	m := map[string]float64{}
	var sum, sq, total, completion, truncated, errs float64
	truncatedBy := map[string]float64{TruncatedMaxTokens: 0, TruncatedContext: 0}
	metricSums := map[string]float64{}
	for _, t := range trajs {
		x := float64(float32(t.Reward))
		sum += x
		sq += x * x
		total += float64(len(t.PromptTokens) + len(t.Tokens))
		completion += float64(len(t.Tokens))
		for _, r := range t.Rewritten {
			total += float64(len(r.PromptTokens) + len(r.Tokens))
			completion += float64(len(r.Tokens))
		}
		if len(t.AgentCalls) > 0 {
			metricSums["agent/calls"] += float64(len(t.AgentCalls))
			metricSums["agent/samples"] += float64(1 + len(t.Rewritten))
		}
		if t.Truncated {
			truncated++
			truncatedBy[t.TruncatedBy]++
		}
		errs += float64(len(t.Errors))
		for k, v := range t.Metrics {
			metricSums["reward/"+k] += v
		}
		// Tool counters are the episode's, not the rubric's: tool_calls,
		// tool_errors, tool_calls/<name>, as means per rollout.
		for k, v := range t.ToolMetrics {
			metricSums[k] += v
		}
	}
	n := float64(len(trajs))
	m["reward"] = sum / n
	m["reward/std"] = math.Sqrt(math.Max(sq/n-m["reward"]*m["reward"], 0))
	for k, v := range metricSums {
		m[k] = v / n
	}
	m["tokens/total"] = total
	m["completion_len/mean"] = completion / n
	m["truncated_frac"] = truncated / n
	// Why episodes were truncated: a last turn at max_tokens, or a
	// conversation that outgrew its KV slot (the context), which ends an
	// episode early and so must not pass unseen.
	for why, k := range truncatedBy {
		m["truncated/"+why] = k / n
	}
	m["errors"] = errs
	return m
}

// Failures summarises the failed rollouts of a batch: how many of them
// recorded an error, how many of those failed generating a model turn
// (on a server: the server's failure, not the environment's), and the
// first error, which is usually the cause of the rest (a rubric that
// fails on one rollout fails on all).
type Failures struct {
	Failed, Total int
	Generating    int
	First         string
}

// CountFailures is trajs' Failures.
func CountFailures(trajs []Trajectory) Failures {
	f := Failures{Total: len(trajs)}
	for _, t := range trajs {
		if len(t.Errors) == 0 {
			continue
		}
		f.Failed++
		if t.FailedGenerating {
			f.Generating++
		}
		if f.First == "" {
			f.First = t.Errors[0]
		}
	}
	return f
}

// All is true for a batch in which every rollout failed.
func (f Failures) All() bool { return f.Total > 0 && f.Failed == f.Total }

// Suffix is what a step's line adds when rollouts failed, so a broken
// rubric shows on the screen and not only as "errors" in metrics.
func (f Failures) Suffix() string {
	if f.Failed == 0 {
		return ""
	}
	return fmt.Sprintf("  errors %d/%d rollouts (first: %s)", f.Failed, f.Total, f.FirstLine(200))
}

// FirstLine is the first error on one line of at most n runes.
func (f Failures) FirstLine(n int) string {
	msg := strings.Join(strings.Fields(f.First), " ")
	if r := []rune(msg); len(r) > n {
		msg = string(r[:n]) + "…"
	}
	return msg
}
