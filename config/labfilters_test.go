package config

import (
	"strings"
	"testing"
)

const filterBase = `model = "Qwen/Qwen3-0.6B"
[[env]]
id = "reverse-text"
`

// TestLabZeroAdvantageFilter: Lab's zero_advantage filter entry sets
// [loss] filter_zero_advantages (enforce = false turns it off, unset
// keeps it on), other filter types are warned about at their line, and an
// entry that contradicts [loss] filter_zero_advantages is an error naming
// both.
func TestLabZeroAdvantageFilter(t *testing.T) {
	c, err := Parse([]byte(filterBase+`
[[post_batch_filters]]
type = "gibberish"
enforce = false

[[post_batch_filters]]
type = "zero_advantage"
enforce = false
`), "f.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Loss.FilterZeroAdvantages {
		t.Error("enforce = false left filter_zero_advantages on")
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], `f.toml:6: accepted and ignored locally: [[post_batch_filters]] type = "gibberish"`) {
		t.Errorf("warnings %q, want one for the gibberish filter at line 6", c.Warnings)
	}

	c, err = Parse([]byte("pre_batch_filters = [{type = \"zero_advantage\"}]\n"+filterBase), "f.toml")
	if err != nil || !c.Loss.FilterZeroAdvantages || len(c.Warnings) != 0 {
		t.Errorf("unset enforce: filter %v, warnings %q, err %v", c.Loss.FilterZeroAdvantages, c.Warnings, err)
	}

	_, err = Parse([]byte(`pre_batch_filters = [{type = "zero_advantage", enforce = false}]
`+filterBase+`[loss]
filter_zero_advantages = true
`), "f.toml")
	if err == nil || !strings.Contains(err.Error(), "conflicts with [loss] filter_zero_advantages = true; keep one of them") {
		t.Errorf("conflict: %v", err)
	}
}

// TestLossProblemsAllAtOnce: every invalid [loss] key is its own line,
// each naming the key and the fix (an unset epsilon_high at the section).
func TestLossProblemsAllAtOnce(t *testing.T) {
	_, err := Parse([]byte(filterBase+`
[loss]
loss_type = "cispo"
importance_sampling_level = "sequence"
importance_sampling_correction = "sequence_clip"
kl_tau = -1
`), "f.toml")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"f.toml:5:2: [loss] epsilon_high = 0.2: loss_type = \"cispo\" caps the importance weight at epsilon_high itself; set it ≥ 1",
		"f.toml:7:1: [loss] importance_sampling_level = \"sequence\": GSPO's sequence ratio applies to the PPO-clip loss types",
		"f.toml:8:1: [loss] importance_sampling_correction = \"sequence_clip\": want \"none\", \"token_truncate\"",
		"f.toml:9:1: [loss] kl_tau = -1: want a value ≥ 0",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\nlacks %q", err, want)
		}
	}
}
