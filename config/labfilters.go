package config

import "fmt"

// resolveLabFilters applies Lab's rollout filters: a [[pre_batch_filters]]
// or [[post_batch_filters]] entry of type "zero_advantage" is Lab's switch
// for the filter grpo runs as [loss] filter_zero_advantages (enforce =
// false keeps those groups; unset enforces it, Lab's default), so it sets
// that key; an entry of another type (gibberish, repetition, …) is
// accepted and ignored, with a warning. Entries that disagree with each
// other or with the [loss] key are errors, as for the other aliases.
func (c *Config) resolveLabFilters(l *problems) []warning {
	var warns []warning
	var setBy string
	for _, list := range []struct {
		key     string
		filters []map[string]any
	}{{"pre_batch_filters", c.PreBatchFilters}, {"post_batch_filters", c.PostBatchFilters}} {
		for i, f := range list.filters {
			path := fmt.Sprintf("%s.%d", list.key, i)
			typ, _ := f["type"].(string)
			if typ != "zero_advantage" {
				pos, _ := c.src.Locate(path+".type", path, list.key)
				warns = append(warns, warning{pos.Line, pos.Column, fmt.Sprintf("%s:%d: accepted and ignored locally: [[%s]] type = %q because grpo runs only the zero_advantage filter", c.src.Name, pos.Line, list.key, typ)})
				continue
			}
			enforce := true
			if v, ok := f["enforce"]; ok {
				b, isBool := v.(bool)
				if !isBool {
					l.at(fmt.Sprintf("key %q: enforce = %v: want true (drop groups whose rewards are all equal) or false (keep them)", path+".enforce", v), path+".enforce", path)
					continue
				}
				enforce = b
			}
			switch {
			case c.src.Has("loss.filter_zero_advantages") && c.Loss.FilterZeroAdvantages != enforce:
				l.at(fmt.Sprintf("key %q: a zero_advantage filter with enforce = %v conflicts with [loss] filter_zero_advantages = %v; keep one of them", path, enforce, c.Loss.FilterZeroAdvantages), path+".enforce", path)
			case setBy != "" && c.Loss.FilterZeroAdvantages != enforce:
				l.at(fmt.Sprintf("key %q: a zero_advantage filter with enforce = %v conflicts with the one in %s; keep one of them", path, enforce, setBy), path+".enforce", path)
			default:
				c.Loss.FilterZeroAdvantages, setBy = enforce, path
			}
		}
	}
	return warns
}
