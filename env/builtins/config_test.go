package builtins_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
)

// The configs config's tests parse, checked here against the real
// registry (config takes its env check injected and does not import env).
const configDir = "../../config/testdata"

// TestExampleConfigsPassRegistry: the Lab-layout example configs name
// builtins with args they take.
func TestExampleConfigsPassRegistry(t *testing.T) {
	files, _ := filepath.Glob("../../examples/configs/*.toml")
	if len(files) < 4 {
		t.Fatalf("found %d example configs, want the 4 Lab examples", len(files))
	}
	for _, f := range files {
		c, err := config.Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.ValidateEnvs(env.Check); err != nil {
			t.Fatalf("%s against the env registry: %v", f, err)
		}
	}
}

// TestRegistryEnvCheck: the real registry rejects an unknown id and an
// unknown arg, located at the id and the arg.
func TestRegistryEnvCheck(t *testing.T) {
	for f, want := range map[string]string{
		configDir + "/configs/bad/unknown-env-id.toml": `unknown-env-id.toml:8:1: env[0] id = "primeintellect/no-such-env": unknown environment; known: `,
		configDir + "/configs/bad/bad-env-arg.toml":    `bad-env-arg.toml:12:10: env[1] id = "primeintellect/alphabet-sort": args.min_turnz: unknown argument of alphabet-sort; did you mean "min_turns"?`,
	} {
		c, err := config.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		err = c.ValidateEnvs(env.Check)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v\nwant %s", f, err, want)
		}
	}
}

// TestGEPAConfigsPassRegistry: every GEPA layout's env id and args pass
// the registry, and an unknown id is reported at its line.
func TestGEPAConfigsPassRegistry(t *testing.T) {
	for _, name := range []string{"top-level-env", "env-table", "seed-layout", "env-array"} {
		g, err := config.LoadGEPA(configDir + "/gepa/" + name + ".toml")
		if err != nil {
			t.Fatal(err)
		}
		if err := g.ValidateEnv(env.Check); err != nil {
			t.Error(err)
		}
	}
	g, err := config.ParseGEPA([]byte("model = \"m\"\nreflection_model = \"r\"\nenv_id = \"primeintellect/no-such\"\n"), "g.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.ValidateEnv(env.Check); err == nil || !strings.HasPrefix(err.Error(), `g.toml:3:1: env_id = "primeintellect/no-such": unknown environment`) {
		t.Errorf("unknown env: %v", err)
	}
}

// TestConfigChecksAgainstRegistry: the configs whose env blocks config's
// own tests check with a stand-in — several mistakes at once, overrides —
// give the same results with the real registry.
func TestConfigChecksAgainstRegistry(t *testing.T) {
	_, err := config.LoadWith(configDir+"/configs/several/three-mistakes.toml", config.ParseOptions{Envs: env.Check})
	if err == nil || len(strings.Split(err.Error(), "\n")) != 3 || !strings.Contains(err.Error(), `env[0] id = "primeintellect/no-such-env": unknown environment`) {
		t.Errorf("three mistakes: %v", err)
	}
	base := "model = \"Qwen/Qwen3-0.6B\"\n[[env]]\nid = \"reverse-text\"\n[[env]]\nid = \"alphabet-sort\"\nargs = { min_turns = 2 }\n"
	var ovs []config.Override
	for _, set := range []string{"env[0].args.num_train_examples=50", "env.1.args.max_turns=4"} {
		o, err := config.ParseSet(set)
		if err != nil {
			t.Fatal(err)
		}
		ovs = append(ovs, o)
	}
	if _, err := config.ParseWith([]byte(base), "o.toml", config.ParseOptions{Overrides: ovs, Envs: env.Check}); err != nil {
		t.Errorf("overrides of env args: %v", err)
	}
}
