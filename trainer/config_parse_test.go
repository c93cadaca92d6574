package trainer

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
	c, err := ParseConfig([]byte(minimalConfig), "min.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Model = "Qwen/Qwen3-0.6B"
	want.Sampling.MaxTokens = 64
	want.Env = []EnvConfig{{ID: "reverse-text", Weight: 1, Name: "reverse-text"}}
	got := *c
	got.src = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestLabAliases(t *testing.T) {
	c, err := ParseConfig([]byte(minimalConfig+`
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
	c, err = ParseConfig([]byte(same), "s.toml")
	if err != nil || c.Optimizer.LR != 3e-5 {
		t.Errorf("equal alias and key: %v, lr %v", err, c.Optimizer.LR)
	}
}

// TestLossModeString: Lab's top-level loss = "rl" coexists with grpo's
// [loss] table in the schema, and blanking it keeps later positions right.
func TestLossModeString(t *testing.T) {
	doc := "loss = \"rl\"\n" + minimalConfig + "\n[optimizer]\nlr = -1\n"
	_, err := ParseConfig([]byte(doc), "l.toml")
	if err == nil || !strings.HasPrefix(err.Error(), "l.toml:11:1: [optimizer] lr = -1") {
		t.Fatalf("got %v", err)
	}
	// TOML forbids loss as both a string and a table; say which to keep.
	_, err = ParseConfig([]byte(doc+"[loss]\nbeta = 0.1\n"), "l.toml")
	if err == nil || !strings.Contains(err.Error(), `l.toml:12:2: key "loss": loss = "rl" and a [loss] table cannot both be written; remove loss = "rl"`) {
		t.Fatalf("got %v", err)
	}
	c, err := ParseConfig([]byte("loss = \"rl\"\n"+minimalConfig), "l.toml")
	if err != nil || c.LossMode != "rl" || c.Loss != loss.DefaultConfig() {
		t.Fatalf("loss = rl: %v %+v", err, c)
	}
}

func TestEnvVersionAndWeights(t *testing.T) {
	doc := strings.Replace(minimalConfig, `id = "reverse-text"`, "id = \"primeintellect/gsm8k@0.1.2\"\nweight = 3\n\n[[env]]\nid = \"reverse-text\"\nname = \"rt\"", 1)
	c, err := ParseConfig([]byte(doc), "v.toml")
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
	c.Env = []EnvConfig{{ID: "gsm8k", Weight: 1, Name: "gsm8k"}}
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

// TestScanSourcePositions checks the key index against positions counted
// by hand in the document below.
func TestScanSourcePositions(t *testing.T) {
	doc := "model = 'x'\n[[env]]\nid = 'a'\n  args = { n = 1, deep = { k = 2 } }\n[[env]]\nid = 'b'\n[env.args]\nm = 3\n"
	s := scanSource("f", []byte(doc))
	want := map[string][2]int{
		"model":             {1, 1},
		"env":               {2, 3},
		"env.0":             {2, 3},
		"env.0.id":          {3, 1},
		"env.0.args":        {4, 3},
		"env.0.args.n":      {4, 12},
		"env.0.args.deep.k": {4, 28},
		"env.1":             {5, 3},
		"env.1.id":          {6, 1},
		"env.1.args":        {7, 2},
		"env.1.args.m":      {8, 1},
	}
	for path, lc := range want {
		p, ok := s.pos[path]
		if !ok || p.Line != lc[0] || p.Column != lc[1] {
			t.Errorf("%s at %d:%d, want %d:%d (found %v)", path, p.Line, p.Column, lc[0], lc[1], ok)
		}
	}
	if got := displayKey("env.1.args.m"); got != "env[1].args.m" {
		t.Errorf("displayKey = %q", got)
	}
}

// TestEditDistance against values worked out by hand (OSA distance).
func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{
		{"kitten", "sitting", 3}, {"", "abc", 3}, {"abc", "abc", 0},
		{"ca", "ac", 1}, {"max_tokenz", "max_tokens", 1}, {"batchsize", "batch_size", 1},
		{"ca", "abc", 3}, // OSA: no edit of a transposed pair (true Damerau gives 2)
	} {
		if d := editDistance(c.a, c.b); d != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, d, c.d)
		}
	}
	if s := closest("learning-rate", []string{"learning_rate", "lora_alpha"}); s != "learning_rate" {
		t.Errorf("closest dashed = %q", s)
	}
	if s := closest("zzz", []string{"model", "seed"}); s != "" {
		t.Errorf("closest far = %q", s)
	}
}

// FuzzParseConfig: no input panics, and every error is one line.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(minimalConfig))
	f.Add([]byte("[env]\nid = 1\n[[env]]\n"))
	f.Add([]byte("loss = 'rl'\n[loss]\n"))
	f.Add([]byte("env = [{id='a', args={x=[1,{y=2}]}}]\n[eval]\nn_samples=-3\n"))
	f.Add([]byte("model='m'\n[optimizer]\nbetas=[]\n[[eval.env]]\n[eval.env.args]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data, "fuzz.toml")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		_ = c.ValidateEnvs(testEnvCheck)
		_ = ConfigReference()
	})
}
