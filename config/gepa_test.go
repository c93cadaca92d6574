package config

import (
	"strings"
	"testing"
)

// TestGEPALayouts: both of Lab's GEPA layouts parse to the same fields,
// unset budget keys taking base.toml's values (env/builtins' tests check
// their env ids against the registry).
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
}

// TestGEPAOtherLayouts: the seed's layout and Lab's [[env]] layout land
// in the canonical fields: environment → env_id, teacher_model →
// reflection_model, n_eval_samples → num_val, generations ×
// population_size × n_eval_samples → max_calls (4·5·10 = 200); [[env]]
// id/args, [gepa] max_concurrent/seed and [sampling] likewise.
func TestGEPAOtherLayouts(t *testing.T) {
	seed, err := LoadGEPA("testdata/gepa/seed-layout.toml")
	if err != nil {
		t.Fatal(err)
	}
	if seed.EnvID != "reverse-text" || seed.ReflectionModel != "teacher" || seed.GEPA.NumVal != 10 || seed.GEPA.MaxCalls != 200 || seed.GEPA.NumTrain != 100 {
		t.Errorf("seed layout: %+v", seed)
	}
	arr, err := LoadGEPA("testdata/gepa/env-array.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := arr.SamplingParams()
	if arr.EnvID != "primeintellect/alphabet-sort" || arr.EnvArgs["dataset_name"] != "synthetic" || arr.Execution.MaxConcurrent != 4 || arr.Execution.Seed != 9 ||
		!arr.GEPA.UseMerge || arr.GEPA.MaxMergeInvocations != 5 || p.MaxTokens != 64 || p.Temperature != 0.5 || p.TopP != 1 || len(p.Stop) != 1 || p.Stop[0] != "</answer>" {
		t.Errorf("[[env]] layout: %+v, sampling %+v", arr, p)
	}
	if got := arr.EndpointsFile("testdata/gepa/env-array.toml"); got != "testdata/gepa/endpoints.toml" {
		t.Errorf("endpoints file %q, want it beside the config", got)
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
		{"model = \"m\"\nreflection_model = \"r\"\n[[env]]\nid = \"x\"\n[[env]]\nid = \"y\"\n", "g.toml:3:3: key \"env\": 2 [[env]] blocks; GEPA optimises one environment's prompt"},
		{"model = \"m\"\nreflection_model = \"r\"\nteacher_model = \"t\"\nenv_id = \"x\"\n", `g.toml:3:1: key "teacher_model": teacher_model = "t" and reflection_model = "r" name two teachers`},
		{"model = \"m\"\nreflection_model = \"r\"\nenv_id = \"x\"\ngenerations = 3\n", "g.toml:4:1: generations and population_size come together"},
		{"model = \"m\"\nreflection_model = \"r\"\nenv_id = \"x\"\ngenerations = 3\npopulation_size = 2\n[gepa]\nmax_calls = 9\n", "g.toml:4:1: generations × population_size and [gepa] max_calls both set the budget"},
		{"model = \"m\"\nreflection_model = \"r\"\nenv_id = \"x\"\nn_eval_samples = 3\n[gepa]\nnum_val = 4\n", "g.toml:4:1: key \"n_eval_samples\": n_eval_samples = 3 conflicts with [gepa] num_val = 4"},
		{"model = \"m\"\nreflection_model = \"r\"\n[env]\nid = \"x\"\nenv_id = \"y\"\n", `g.toml:4:1: [env] id = "x" and env_id = "y" name two environments`},
		{"model = \"m\"\nreflection_model = \"r\"\nenv_id = \"x\"\n[gepa]\nseed = 1\n[execution]\nseed = 2\n", "g.toml:5:1: [gepa] seed = 1 conflicts with [execution] seed = 2"},
		{"model = \"m\"\nreflection_model = \"r\"\nenv_id = \"x\"\n[sampling]\ntemprature = 1.0\n", `g.toml:5:1: [sampling] temprature: not a sampling key grpo reads (it reads max_tokens, temperature, top_p, top_k, min_p, stop); did you mean "temperature"?`},
		{"model = \"m\"\nreflection_model = \"r\"\nenv_id = \"x\"\n[sampling]\ntop_p = 1.5\n", "g.toml:5:1: [sampling] top_p = 1.5"},
		{"model = \"m\"\nreflection_model = \"r\"\nenv_id = \"x\"\n[sampling]\nmax_tokens = 5\n[execution]\nsampling_args = {}\n", "g.toml:4:2: [sampling] and [execution] sampling_args are two layouts of one setting"},
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
	if err := g.ValidateEnv(testEnvCheck); err == nil || !strings.HasPrefix(err.Error(), `g.toml:3:1: env_id = "primeintellect/no-such": unknown environment`) {
		t.Errorf("unknown env: %v", err)
	}
}

// TestGEPAReasoningEffort: Lab's gpt-oss GEPA config sets [sampling]
// reasoning_effort; it parses without a warning, the value is the
// student's (ReasoningEffort), and a value Lab would refuse is an error.
func TestGEPAReasoningEffort(t *testing.T) {
	const file = "model = \"m\"\nreflection_model = \"m\"\n\n[[env]]\nenv_id = \"primeintellect/reverse-text\"\n\n[sampling]\nmax_tokens = 1024\nreasoning_effort = %q\n"
	g, err := ParseGEPA([]byte(strings.Replace(file, "%q", `"low"`, 1)), "gpt-oss.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Warnings) != 0 || g.ReasoningEffort() != "low" || g.SamplingParams().MaxTokens != 1024 {
		t.Errorf("warnings %q, reasoning_effort %q, params %+v", g.Warnings, g.ReasoningEffort(), g.SamplingParams())
	}
	_, err = ParseGEPA([]byte(strings.Replace(file, "%q", `"max"`, 1)), "gpt-oss.toml")
	if err == nil || !strings.Contains(err.Error(), `gpt-oss.toml:9:1: [sampling] reasoning_effort = "max": want "low", "medium" or "high"`) {
		t.Errorf("bad effort: %v", err)
	}
}
