package config

import "fmt"

// resolveLabFilters applies Lab's rollout filters (prime-rl's orchestrator
// filters, which Lab passes through) to [loss] filter_zero_advantages, the
// one filter grpo runs. As in prime-rl (before its filters became
// orchestrator.train.filter_zero_advantages), zero-advantage rollouts are
// dropped when a pre_batch_filters entry {type = "zero_advantage"} has
// enforce = true, or a post_batch_filters one has enforce true or unset
// (its default), or post_batch_filters is left out (its default list
// enforces that filter); a file that sets neither list leaves the [loss]
// key alone. Entries of other types (gibberish, repetition) are accepted
// and ignored, with a warning at their line. A result that contradicts
// [loss] filter_zero_advantages written in the file is an error.
func (c *Config) resolveLabFilters(l *problems) []warning {
	if !c.src.Has("pre_batch_filters") && !c.src.Has("post_batch_filters") {
		return nil
	}
	var warns []warning
	enforced := !c.src.Has("post_batch_filters")
	for _, list := range []struct {
		key           string
		filters       []map[string]any
		enforcesUnset bool // what an entry without enforce does
	}{{"pre_batch_filters", c.PreBatchFilters, false}, {"post_batch_filters", c.PostBatchFilters, true}} {
		for i, f := range list.filters {
			path := fmt.Sprintf("%s.%d", list.key, i)
			typ, _ := f["type"].(string)
			if typ != "zero_advantage" {
				pos, _ := c.src.Locate(path+".type", path, list.key)
				warns = append(warns, warning{pos.Line, pos.Column, fmt.Sprintf("%s:%d: accepted and ignored locally: [[%s]] type = %q because grpo runs only the zero_advantage filter", c.src.Name, pos.Line, list.key, typ)})
				continue
			}
			enforce := list.enforcesUnset
			if v, ok := f["enforce"]; ok {
				b, isBool := v.(bool)
				if !isBool {
					l.at(fmt.Sprintf("key %q: enforce = %v: want true (drop groups whose rewards are all equal) or false (keep them)", path+".enforce", v), path+".enforce", path)
					continue
				}
				enforce = b
			}
			enforced = enforced || enforce
		}
	}
	if c.src.Has("loss.filter_zero_advantages") {
		if c.Loss.FilterZeroAdvantages != enforced {
			l.at(fmt.Sprintf("key \"loss.filter_zero_advantages\": [loss] filter_zero_advantages = %v conflicts with the zero_advantage filter of pre_batch_filters/post_batch_filters, which comes to %v; keep one of them", c.Loss.FilterZeroAdvantages, enforced), "loss.filter_zero_advantages")
		}
		return warns
	}
	c.Loss.FilterZeroAdvantages = enforced
	return warns
}
