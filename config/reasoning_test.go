package config

import (
	"strings"
	"testing"
)

// TestReasoningEffortAlike: train ([sampling] and [eval.sampling]), eval
// files (sampling_args, a block's over the top level's) and GEPA (both
// layouts) accept reasoning_effort = "high" without a warning and carry
// the value to where the chat template is rendered, and refuse "max" at
// the key (issue 27; serve does the same to a request: serve's
// TestBadRequestsGetErrorObjects). Whether a model's template reads it is
// known only with the model: the trainer, eval, GEPA and serve warn then.
func TestReasoningEffortAlike(t *testing.T) {
	const train = "model = \"m\"\nmax_steps = 1\nbatch_size = 2\nrollouts_per_example = 2\n[[env]]\nid = \"reverse-text\"\n"
	files := []struct {
		name  string
		parse func(effort string) (got string, warnings []string, err error)
	}{
		{"[sampling]", func(e string) (string, []string, error) {
			c, err := Parse([]byte(train+"[sampling]\nreasoning_effort = \""+e+"\"\n"), "run.toml")
			if err != nil {
				return "", nil, err
			}
			return c.Sampling.ReasoningEffort, c.Warnings, nil
		}},
		{"[eval.sampling]", func(e string) (string, []string, error) {
			c, err := Parse([]byte(train+"[eval.sampling]\nreasoning_effort = \""+e+"\"\n"), "run.toml")
			if err != nil {
				return "", nil, err
			}
			return c.Eval.Sampling.ReasoningEffort, c.Warnings, nil
		}},
		{"eval sampling_args", func(e string) (string, []string, error) {
			f, err := ParseEval([]byte("model = \"m\"\nsampling_args = { reasoning_effort = \"low\" }\n[[eval]]\nenv_id = \"reverse-text\"\nsampling_args = { reasoning_effort = \""+e+"\" }\n[[eval]]\nenv_id = \"gsm8k\"\n"), "eval.toml")
			if err != nil {
				return "", nil, err
			}
			specs, err := f.Specs(EvalOverrides{})
			if err != nil {
				return "", nil, err
			}
			if specs[1].ReasoningEffort != "low" {
				t.Errorf("eval sampling_args: the second block inherits %q, want the top level's \"low\"", specs[1].ReasoningEffort)
			}
			return specs[0].ReasoningEffort, f.Warnings, nil
		}},
		{"GEPA [sampling]", func(e string) (string, []string, error) {
			g, err := ParseGEPA([]byte("model = \"m\"\nreflection_model = \"m\"\n[[env]]\nenv_id = \"reverse-text\"\n[sampling]\nreasoning_effort = \""+e+"\"\n"), "gepa.toml")
			if err != nil {
				return "", nil, err
			}
			return g.ReasoningEffort(), g.Warnings, nil
		}},
		{"GEPA execution.sampling_args", func(e string) (string, []string, error) {
			g, err := ParseGEPA([]byte("model = \"m\"\nreflection_model = \"m\"\n[[env]]\nenv_id = \"reverse-text\"\n[execution.sampling_args]\nreasoning_effort = \""+e+"\"\n"), "gepa.toml")
			if err != nil {
				return "", nil, err
			}
			return g.ReasoningEffort(), g.Warnings, nil
		}},
	}
	for _, f := range files {
		got, warnings, err := f.parse("high")
		if err != nil || got != "high" || strings.Contains(strings.Join(warnings, "\n"), "reasoning_effort") {
			t.Errorf("%s: high: got %q, warnings %q, %v", f.name, got, warnings, err)
		}
		if _, _, err := f.parse("max"); err == nil || !strings.Contains(err.Error(), `reasoning_effort = "max": want "low", "medium" or "high"`) {
			t.Errorf("%s: max: %v", f.name, err)
		}
	}
}
