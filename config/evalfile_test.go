package config

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/sampler"
)

func TestParseEvalFile(t *testing.T) {
	f, err := ParseEval([]byte(`
model = "Qwen/Qwen3-0.6B"
num_examples = 50
rollouts_per_example = 3
max_tokens = 256
endpoint_id = "gpt-5-mini"
save_results = true

[[eval]]
id = "gsm8k"
num_examples = 100
args = { num_eval_examples = 200 }

[[eval]]
env_id = "reverse-text"
name = "rt"
temperature = 0.5
sampling_args = { top_p = 0.9, top_k = 20, stop = ["</x>"] }

[eval.env_args]
seed = 3
`), "multi.toml")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := f.Specs(EvalOverrides{RolloutsPerExample: ptr(4), Sampling: sampler.Overrides{MaxTokens: ptr(64)}, Adapter: "runs/a/adapter"})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("%d specs", len(specs))
	}
	g, r := specs[0], specs[1]
	// Block keys win over the command line, which wins over the top level.
	if g.Name != "gsm8k" || g.NumExamples != 100 || g.RolloutsPerExample != 4 || g.Sampling.MaxTokens != 64 || g.Sampling.Temperature != 1 {
		t.Errorf("gsm8k spec %+v", g)
	}
	if g.Args["num_eval_examples"] != int64(200) || g.Model != "Qwen/Qwen3-0.6B" || g.Adapter != "runs/a/adapter" || g.Device != "cpu" {
		t.Errorf("gsm8k spec %+v", g)
	}
	if r.ID != "reverse-text" || r.Name != "rt" || r.NumExamples != 50 || r.Sampling.Temperature != 0.5 ||
		r.Sampling.TopP != 0.9 || r.Sampling.TopK != 20 || len(r.Sampling.Stop) != 1 || r.Args["seed"] != int64(3) {
		t.Errorf("reverse-text spec %+v", r)
	}
	want := []string{"endpoint_id: accepted and ignored locally", "save_results: accepted and ignored locally"}
	if len(f.Warnings) != 2 || !strings.HasPrefix(f.Warnings[0], want[0]) || !strings.HasPrefix(f.Warnings[1], want[1]) {
		t.Errorf("warnings %q", f.Warnings)
	}
}

func TestEvalFileDefaults(t *testing.T) {
	f, err := ParseEval([]byte("[[eval]]\nid = \"gsm8k\"\n"), "minimal.toml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Specs(EvalOverrides{}); err == nil || !strings.Contains(err.Error(), "has no model") {
		t.Errorf("no model: %v", err)
	}
	specs, err := f.Specs(EvalOverrides{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	s := specs[0]
	if s.NumExamples != DefaultEvalExamples || s.RolloutsPerExample != DefaultEvalRollouts || s.Sampling.MaxTokens != DefaultEvalMaxTokens || s.Sampling.TopP != 1 {
		t.Errorf("defaults %+v", s)
	}
}

// TestEvalFileErrors: each bad file fails with one line naming the file,
// position and key.
func TestEvalFileErrors(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"unknown key", "[[eval]]\nid = \"x\"\nnum_exampels = 3\n", `bad.toml:3:1: key "eval[0].num_exampels": unknown key in [eval]; did you mean "num_examples"?`},
		{"unknown top key", "modle = \"m\"\n[[eval]]\nid = \"x\"\n", `bad.toml:1:1: key "modle": unknown key; did you mean "model"?`},
		{"single bracket", "[eval]\nid = \"x\"\n", "bad.toml:1:2: `[eval]` must be written `[[eval]]`"},
		{"no eval", "model = \"m\"\n", "bad.toml: no [[eval]] block"},
		{"no id", "[[eval]]\nnum_examples = 3\n", "bad.toml:1:3: [[eval]] 1 has no id"},
		{"id clash", "[[eval]]\nid = \"a\"\nenv_id = \"b\"\n", `bad.toml:3:1: [[eval]] 1: id = "a" and env_id = "b" disagree`},
		{"args clash", "[[eval]]\nid = \"a\"\nargs = {}\nenv_args = {}\n", "bad.toml:4:1: [[eval]] 1 (id = \"a\"): both args and env_args"},
		{"bad count", "[[eval]]\nid = \"a\"\nrollouts_per_example = 0\n", `bad.toml:3:1: key "eval[0].rollouts_per_example": rollouts_per_example = 0: want at least 1`},
		{"bad top count", "num_examples = -2\n[[eval]]\nid = \"a\"\n", `bad.toml:1:1: key "num_examples": num_examples = -2`},
		{"type", "[[eval]]\nid = \"a\"\nnum_examples = \"ten\"\n", `bad.toml:3:16: key "eval.num_examples"`},
		{"top_p", "sampling_args = { top_p = 0 }\n[[eval]]\nid = \"a\"\n", `key "sampling_args.top_p": top_p = 0: must be in (0, 1]`},
		{"unknown sampling arg", "[[eval]]\nid = \"a\"\nsampling_args = { topp = 0.5 }\n", `did you mean "top_p"?`},
		{"duplicate name", "[[eval]]\nid = \"a\"\n[[eval]]\nid = \"a\"\n", `[[eval]] 1 and 2 are both named "a"`},
		{"syntax", "[[eval]\nid = \"a\"\n", "bad.toml:1:"},
		{"device", "device = \"tpu\"\n[[eval]]\nid = \"a\"\n", `device = "tpu": want "cpu" or "cuda"`},
	}
	for _, c := range cases {
		_, err := ParseEval([]byte(c.text), "bad.toml")
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s:\n got %s\nwant %s", c.name, err, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
