package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/loss"
)

const minimalConfig = `model = "Qwen/Qwen3-0.6B"

[sampling]
max_tokens = 64

[[env]]
id = "reverse-text"
`

// TestMinimalConfigDefaults: a file that gives only the required keys
// yields DefaultConfig plus those keys.
func TestMinimalConfigDefaults(t *testing.T) {
	c, err := Parse([]byte(minimalConfig), "min.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Model = "Qwen/Qwen3-0.6B"
	want.Sampling.MaxTokens = 64
	want.Env = []Env{{ID: "reverse-text", Weight: 1, Name: "reverse-text"}}
	got := *c
	got.src, got.text = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestLabAliases(t *testing.T) {
	c, err := Parse([]byte(minimalConfig+`
[eval]
n_samples = 50
eval_base_model = false

[checkpoints]
interval = 10
keep_cloud = 5
`), "a.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Eval.NumExamples != 50 || !c.Eval.SkipFirstStep || c.Checkpoint.Interval != 10 {
		t.Errorf("aliases not applied: eval %+v checkpoint %+v", c.Eval, c.Checkpoint)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "a.toml:15: accepted and ignored locally: checkpoints.keep_cloud because") {
		t.Errorf("warnings %q", c.Warnings)
	}
	// Both forms with the same value agree: not an error.
	same := strings.Replace(minimalConfig, "[sampling]", "learning_rate = 3e-5\n[optimizer]\nlr = 3e-5\n[sampling]", 1)
	c, err = Parse([]byte(same), "s.toml")
	if err != nil || c.Optimizer.LR != 3e-5 {
		t.Errorf("equal alias and key: %v, lr %v", err, c.Optimizer.LR)
	}
}

// TestLossModeString: Lab's top-level loss = "rl" coexists with grpo's
// [loss] table in the schema, and blanking it keeps later positions right.
func TestLossModeString(t *testing.T) {
	doc := "loss = \"rl\"\n" + minimalConfig + "\n[optimizer]\nlr = -1\n"
	_, err := Parse([]byte(doc), "l.toml")
	if err == nil || !strings.HasPrefix(err.Error(), "l.toml:11:1: [optimizer] lr = -1") {
		t.Fatalf("got %v", err)
	}
	// TOML forbids loss as both a string and a table; say which to keep.
	_, err = Parse([]byte(doc+"[loss]\nbeta = 0.1\n"), "l.toml")
	if err == nil || !strings.Contains(err.Error(), `l.toml:12:2: key "loss": loss = "rl" and a [loss] table cannot both be written; remove loss = "rl"`) {
		t.Fatalf("got %v", err)
	}
	c, err := Parse([]byte("loss = \"rl\"\n"+minimalConfig), "l.toml")
	if err != nil || c.LossMode != "rl" || c.Loss != loss.DefaultConfig() {
		t.Fatalf("loss = rl: %v %+v", err, c)
	}
}

func TestEnvVersionAndWeights(t *testing.T) {
	doc := strings.Replace(minimalConfig, `id = "reverse-text"`, "id = \"primeintellect/gsm8k@0.1.2\"\nweight = 3\n\n[[env]]\nid = \"reverse-text\"\nname = \"rt\"", 1)
	c, err := Parse([]byte(doc), "v.toml")
	if err != nil {
		t.Fatal(err)
	}
	e0, e1 := c.Env[0], c.Env[1]
	if e0.ID != "primeintellect/gsm8k" || e0.Version != "0.1.2" || e0.Weight != 3 || e0.Name != "primeintellect/gsm8k" {
		t.Errorf("env 0: %+v", e0)
	}
	if e1.Weight != 1 || e1.Name != "rt" {
		t.Errorf("env 1: %+v", e1)
	}
}

// TestValidateWithoutFile: a config built in Go validates with the same
// messages, without a file prefix.
func TestValidateWithoutFile(t *testing.T) {
	c := DefaultConfig()
	c.Model = "m"
	c.Sampling.MaxTokens = 8
	c.Env = []Env{{ID: "gsm8k", Weight: 1, Name: "gsm8k"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.BatchSize = 12
	err := c.Validate()
	if err == nil || err.Error() != "batch_size = 12: must be a positive multiple of rollouts_per_example (8), counting rollouts per step; e.g. batch_size = 128" {
		t.Errorf("got %v", err)
	}
	if err := c.ValidateEnvs(nil); err != nil {
		t.Errorf("nil checker: %v", err)
	}
}

// FuzzParseConfig: no input panics, and an error is at most MaxProblems
// lines (and the "more" line), each naming the file.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(minimalConfig))
	f.Add([]byte("[env]\nid = 1\n[[env]]\n"))
	f.Add([]byte("loss = 'rl'\n[loss]\n"))
	f.Add([]byte("env = [{id='a', args={x=[1,{y=2}]}}]\n[eval]\nn_samples=-3\n"))
	f.Add([]byte("model='m'\n[optimizer]\nbetas=[]\n[[eval.env]]\n[eval.env.args]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.toml")
		if err != nil {
			lines := strings.Split(err.Error(), "\n")
			for _, l := range lines {
				if !strings.HasPrefix(l, "fuzz.toml") && !strings.HasPrefix(l, "(") {
					t.Fatalf("error line without the file: %q", err)
				}
			}
			if len(lines) > MaxProblems+1 {
				t.Fatalf("%d error lines: %q", len(lines), err)
			}
			return
		}
		_ = c.ValidateEnvs(testEnvCheck)
		_ = Reference()
	})
}
