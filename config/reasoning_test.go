package config

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

// TestReasoningEffortAlike: train ([sampling] and [eval.sampling]), eval
// files (sampling_args) and GEPA accept reasoning_effort = "high" with a
// warning in the same words, and refuse "max" at the key (issue 27; serve
// does the same to a request: serve's TestBadRequestsGetErrorObjects).
func TestReasoningEffortAlike(t *testing.T) {
	const train = "model = \"m\"\nmax_steps = 1\nbatch_size = 2\nrollouts_per_example = 2\n[[env]]\nid = \"reverse-text\"\n"
	files := []struct {
		name  string
		parse func(effort string) ([]string, error)
	}{
		{"[sampling]", func(e string) ([]string, error) {
			c, err := Parse([]byte(train+"[sampling]\nreasoning_effort = \""+e+"\"\n"), "run.toml")
			if err != nil {
				return nil, err
			}
			return c.Warnings, nil
		}},
		{"[eval.sampling]", func(e string) ([]string, error) {
			c, err := Parse([]byte(train+"[eval.sampling]\nreasoning_effort = \""+e+"\"\n"), "run.toml")
			if err != nil {
				return nil, err
			}
			return c.Warnings, nil
		}},
		{"eval sampling_args", func(e string) ([]string, error) {
			f, err := ParseEval([]byte("model = \"m\"\nsampling_args = { reasoning_effort = \""+e+"\" }\n[[eval]]\nenv_id = \"reverse-text\"\n"), "eval.toml")
			if err != nil {
				return nil, err
			}
			return f.Warnings, nil
		}},
		{"GEPA", func(e string) ([]string, error) {
			g, err := ParseGEPA([]byte("model = \"m\"\nreflection_model = \"m\"\n[[env]]\nenv_id = \"reverse-text\"\n[sampling]\nreasoning_effort = \""+e+"\"\n"), "gepa.toml")
			if err != nil {
				return nil, err
			}
			return g.Warnings, nil
		}},
	}
	for _, f := range files {
		warnings, err := f.parse("high")
		if err != nil || !strings.Contains(strings.Join(warnings, "\n"), "reasoning_effort") || !strings.Contains(strings.Join(warnings, "\n"), chat.ReasoningEffortIgnored) {
			t.Errorf("%s: high: warnings %q, %v", f.name, warnings, err)
		}
		if _, err := f.parse("max"); err == nil || !strings.Contains(err.Error(), `reasoning_effort = "max": want "low", "medium" or "high"`) {
			t.Errorf("%s: max: %v", f.name, err)
		}
	}
}
