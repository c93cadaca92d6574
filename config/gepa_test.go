package config

import (
	"strings"
	"testing"
)

// TestGEPALayouts: both of Lab's GEPA layouts parse to the same fields,
// unset budget keys taking base.toml's values, and their env ids pass the
// registry.
func TestGEPALayouts(t *testing.T) {
	top, err := LoadGEPA("testdata/gepa/top-level-env.toml")
	if err != nil {
		t.Fatal(err)
	}
	if top.EnvID != "primeintellect/reverse-text" || top.EnvArgs["num_train_examples"] != int64(200) || top.GEPA.MaxCalls != 300 ||
		top.GEPA.MinibatchSize != 4 || top.Execution.MaxConcurrent != 8 || top.ReflectionModel != "teacher" {
		t.Errorf("top-level layout: %+v", top)
	}
	tab, err := LoadGEPA("testdata/gepa/env-table.toml")
	if err != nil {
		t.Fatal(err)
	}
	if tab.EnvID != "primeintellect/wordle" || tab.EnvArgs["num_eval_examples"] != int64(10) || tab.GEPA.MaxCalls != 500 ||
		tab.GEPA.NumVal != 50 || *tab.GEPA.PerfectScore != 1 || tab.GEPA.StateColumns[0] != "turn" || tab.Execution.SamplingArgs["max_tokens"] != int64(512) {
		t.Errorf("[env] layout: %+v", tab)
	}
	for _, g := range []*GEPA{top, tab} {
		if err := g.ValidateEnv(RegistryEnvCheck); err != nil {
			t.Error(err)
		}
	}
}

// TestGEPAProblems: every problem of a GEPA file at once, at its line.
func TestGEPAProblems(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"model = \"m\"\nreflection_model = \"r\"\nenv_id = \"x\"\n[env]\nenv_id = \"y\"\n",
			"g.toml:3:1: [env] and a top-level env_id/env_args/extra_env_kwargs are two layouts of one setting"},
		{"model = \"m\"\nreflection_model = \"r\"\nenv_id = \"x\"\n[gepa]\nmax_cals = 5\n",
			`g.toml:5:1: key "gepa.max_cals": unknown key in [gepa] of a GEPA config; did you mean "max_calls"?`},
		{"reflection_model = \"r\"\n[env]\nenv_id = \"x\"\n[gepa]\nnum_train = 2\n[execution]\nsampling_args = { max_tokens = 0 }\n",
			"g.toml: key \"model\" is missing: set model = \"...\" (an endpoint id of endpoints.toml, or a model name)\n" +
				"g.toml:5:1: [gepa] minibatch_size = 3 exceeds num_train = 2\n" +
				"g.toml:7:19: [execution] sampling_args max_tokens = 0: want a positive integer"},
		{"model = \"m\"\nreflection_model = \"r\"\n[[env]]\nid = \"x\"\n", "g.toml:3:3: key \"env\": `[[env]]` blocks are not a GEPA layout grpo reads"},
	} {
		_, err := ParseGEPA([]byte(c.text), "g.toml")
		if err == nil {
			t.Errorf("no error, want %s", c.want)
			continue
		}
		got, want := strings.Split(err.Error(), "\n"), strings.Split(c.want, "\n")
		if len(got) != len(want) {
			t.Errorf("got\n%s\nwant\n%s", err, c.want)
			continue
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Errorf("line %d\n  %s\nwant %s", i+1, got[i], want[i])
			}
		}
	}
	g, err := ParseGEPA([]byte("model = \"m\"\nreflection_model = \"r\"\nenv_id = \"primeintellect/no-such\"\n"), "g.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.ValidateEnv(RegistryEnvCheck); err == nil || !strings.HasPrefix(err.Error(), `g.toml:3:1: env_id = "primeintellect/no-such": unknown environment`) {
		t.Errorf("unknown env: %v", err)
	}
}
