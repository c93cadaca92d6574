package config

import (
	"strings"
	"testing"
)

// TestEnvVersionReachesTheChecker: an [[env]] or [[eval.env]] version, as
// a key or as "id@version", reaches the registry as "id@version", and an
// eval file's version key does too; a pin given twice differently fails.
func TestEnvVersionReachesTheChecker(t *testing.T) {
	src := `model = "Qwen/Qwen3-0.6B"
max_steps = 1
[[env]]
id = "gsm8k"
version = "v0"
[[env]]
id = "primeintellect/wordle@v1"
[eval]
interval = 1
[[eval.env]]
id = "reverse-text"
version = "0.1.4"
`
	var seen []string
	_, err := ParseWith([]byte(src), "run.toml", ParseOptions{Envs: func(id string, _ map[string]any) error {
		seen = append(seen, id)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, " "); got != "gsm8k@v0 primeintellect/wordle@v1 reverse-text@0.1.4" {
		t.Errorf("the checker saw %q", got)
	}
	c, _ := Parse([]byte(src), "run.toml")
	if c.Env[1].ID != "primeintellect/wordle" || c.Env[1].Version != "v1" || c.Env[0].Ref() != "gsm8k@v0" || c.Env[0].Name != "gsm8k" {
		t.Errorf("envs %+v", c.Env)
	}

	f, err := ParseEval([]byte("model = \"m\"\n[[eval]]\nenv_id = \"gsm8k\"\nversion = \"v0\"\n[[eval]]\nid = \"gsm8k@v1\"\n"), "eval.toml")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := f.Specs(EvalOverrides{})
	if err != nil || specs[0].ID != "gsm8k@v0" || specs[1].ID != "gsm8k@v1" || specs[0].Name == specs[1].Name {
		t.Errorf("eval specs %+v, %v", specs, err)
	}
	_, err = ParseEval([]byte("model = \"m\"\n[[eval]]\nid = \"gsm8k@v1\"\nversion = \"v0\"\n"), "eval.toml")
	if err == nil || !strings.Contains(err.Error(), `pins version "v1" but version = "v0"`) {
		t.Errorf("two pins: %v", err)
	}
	_, err = Parse([]byte("model = \"m\"\nmax_steps = 1\n[[env]]\nid = \"gsm8k@v1\"\nversion = \"v0\"\n"), "run.toml")
	if err == nil || !strings.Contains(err.Error(), `id pins a version other than version = "v0"`) {
		t.Errorf("two pins in [[env]]: %v", err)
	}
}
