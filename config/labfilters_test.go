package config

import (
	"strings"
	"testing"
)

const filterBase = `model = "Qwen/Qwen3-0.6B"
[[env]]
id = "reverse-text"
`

// TestLabZeroAdvantageFilter: Lab's zero_advantage filter entries decide
// [loss] filter_zero_advantages as prime-rl's filters did (a post-batch
// entry enforces unless enforce = false, a pre-batch one only with enforce
// = true, a missing post_batch_filters list enforces), other filter types
// are warned about at their line, and a result that contradicts [loss]
// filter_zero_advantages is an error naming both.
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
		t.Error("a post-batch zero_advantage filter with enforce = false left filter_zero_advantages on")
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], `f.toml:6: accepted and ignored locally: [[post_batch_filters]] type = "gibberish"`) {
		t.Errorf("warnings %q, want one for the gibberish filter at line 6", c.Warnings)
	}
	for _, tc := range []struct {
		lists string
		want  bool
	}{
		{"post_batch_filters = [{type = \"zero_advantage\"}]\n", true},
		{"pre_batch_filters = [{type = \"zero_advantage\", enforce = false}]\n", true}, // the default post list still enforces
		{"pre_batch_filters = [{type = \"zero_advantage\", enforce = false}]\npost_batch_filters = []\n", false},
		{"pre_batch_filters = [{type = \"zero_advantage\", enforce = true}]\npost_batch_filters = []\n", true},
	} {
		c, err := Parse([]byte(tc.lists+filterBase), "f.toml")
		if err != nil {
			t.Errorf("%s: %v", tc.lists, err)
			continue
		}
		if c.Loss.FilterZeroAdvantages != tc.want || len(c.Warnings) != 0 {
			t.Errorf("%s: filter %v (want %v), warnings %q", tc.lists, c.Loss.FilterZeroAdvantages, tc.want, c.Warnings)
		}
	}

	_, err = Parse([]byte(`post_batch_filters = [{type = "zero_advantage", enforce = false}]
`+filterBase+`[loss]
filter_zero_advantages = true
`), "f.toml")
	if err == nil || !strings.Contains(err.Error(), "[loss] filter_zero_advantages = true conflicts with the zero_advantage filter of pre_batch_filters/post_batch_filters, which comes to false; keep one of them") {
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
