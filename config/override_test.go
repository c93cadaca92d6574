package config

import (
	"reflect"
	"strings"
	"testing"
)

const overrideBase = `model = "Qwen/Qwen3-0.6B"   # base

[sampling]
max_tokens = 128
temperature = 1.0

[[env]]
id = "reverse-text"

[[env]]
id = "alphabet-sort"
args = { min_turns = 2 }
`

func sets(t *testing.T, args ...string) []Override {
	var out []Override
	for _, a := range args {
		o, err := ParseSet(a)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

// TestOverrides: each kind of placement — over a written value, a new key
// after a table's header, inside an inline table, at the top as a dotted
// key — gives the config the value, and the text written is a config that
// parses to the same thing (what the run directory records).
func TestOverrides(t *testing.T) {
	ovs := append(sets(t, "sampling.temperature=0.7", "env[0].args.num_train_examples=50", "env.1.args.max_turns=4",
		"model=Qwen/Qwen3-1.7B", "eval.interval=5", "sampling.stop=[\"</answer>\"]"),
		Override{Flag: "--max-steps 7", Path: "max_steps", Value: "7"}, Override{Flag: "--seed 3", Path: "seed", Value: "3"})
	c, err := ParseWith([]byte(overrideBase), "o.toml", ParseOptions{Overrides: ovs, Envs: testEnvCheck})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case c.Sampling.Temperature != 0.7, c.MaxSteps != 7, c.Seed != 3, c.Model != "Qwen/Qwen3-1.7B", c.Eval.Interval != 5:
		t.Errorf("scalars not set: %+v", c)
	case c.Env[0].Args["num_train_examples"] != int64(50), c.Env[1].Args["max_turns"] != int64(4), c.Env[1].Args["min_turns"] != int64(2):
		t.Errorf("env args: %v, %v", c.Env[0].Args, c.Env[1].Args)
	case !reflect.DeepEqual(c.Sampling.Stop, []string{"</answer>"}):
		t.Errorf("stop %q", c.Sampling.Stop)
	}
	again, err := Parse(c.Text(), "o.toml")
	if err != nil {
		t.Fatalf("the written text does not parse: %v\n%s", err, c.Text())
	}
	if again.MaxSteps != 7 || again.Env[1].Args["max_turns"] != int64(4) || again.Sampling.Temperature != 0.7 {
		t.Errorf("the written text lost overrides:\n%s", c.Text())
	}
	if !strings.Contains(string(c.Text()), "# base") {
		t.Errorf("the file's comments are not kept:\n%s", c.Text())
	}
}

// TestOverrideProblems: a bad override is reported at its flag, with the
// same message as in a file; the file's own problems keep their lines
// though the overrides added lines before them.
func TestOverrideProblems(t *testing.T) {
	file := "[sampling]\nmax_tokens = 128\n[[env]]\nid = \"reverse-text\"\nweight = -1\n"
	for _, c := range []struct {
		ovs  []Override
		want []string
	}{
		{sets(t, "sampling.temprature=0.7"), []string{`--set sampling.temprature=0.7: key "sampling.temprature": unknown key in [sampling]; did you mean "temperature"?`}},
		{sets(t, "max_steps=ten"), []string{`--set max_steps=ten: key "max_steps": want an integer, got a TOML string`}},
		{sets(t, "env[1].id=gsm8k"), []string{`--set env[1].id=gsm8k: key "env[1].id": the file has 1 [[env]] block(s)`}},
		{sets(t, "sampling=1"), []string{`--set sampling=1: key "sampling" is a table; set its keys one by one`}},
		// Inserted lines before the file's problem do not move it.
		{sets(t, "model=m", "sampling.temperature=-1", "env[0].args.seed=1"), []string{
			`--set sampling.temperature=-1: [sampling] temperature = -1: must be ≥ 0`,
			`p.toml:5:1: env[0] (reverse-text) weight = -1: must be a finite number ≥ 0`}},
	} {
		_, err := ParseWith([]byte(file), "p.toml", ParseOptions{Overrides: c.ovs})
		if err == nil {
			t.Errorf("%v: no error", c.ovs)
			continue
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != len(c.want) {
			t.Errorf("%v: %d lines, want %d:\n%s", c.ovs[0].Flag, len(lines), len(c.want), err)
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("%v line %d:\n  %s\nwant %s", c.ovs[0].Flag, i+1, lines[i], w)
			}
		}
	}
	if _, err := ParseSet("no-equals"); err == nil || !strings.Contains(err.Error(), "want KEY=VALUE") {
		t.Errorf("ParseSet without =: %v", err)
	}
}
