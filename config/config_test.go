package config

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tomlschema"
)

// testEnvArgs stand in for package env's registry, which config does not
// import (env/builtins' tests check configs against the real one): the
// four Lab example envs with the args their Prime versions take.
var testEnvArgs = map[string][]string{
	"reverse-text":  {"dataset_name", "dataset_split", "system_prompt", "num_train_examples", "num_eval_examples", "seed"},
	"alphabet-sort": {"min_turns", "max_turns", "min_names_per_turn", "max_names_per_turn", "similarity_power", "power_per_turn", "seed"},
	"gsm8k":         {"num_train_examples", "num_eval_examples", "system_prompt", "use_think"},
	"wordle":        {"num_train_examples", "num_eval_examples", "use_think"},
}

func testEnvCheck(id string, args map[string]any) error {
	known, ok := testEnvArgs[strings.TrimPrefix(id, "primeintellect/")]
	if !ok {
		return fmt.Errorf("unknown environment; builtins: alphabet-sort, gsm8k, reverse-text, wordle")
	}
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !contains(known, k) {
			msg := fmt.Sprintf("args.%s: unknown argument", k)
			if s := tomlschema.Closest(k, known); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return argError{k, msg}
		}
	}
	return nil
}

// argError is how a registry names the arg an error is about.
type argError struct{ arg, msg string }

func (e argError) Error() string   { return e.msg }
func (e argError) ArgName() string { return e.arg }

// TestExampleConfigs: the Lab-layout examples parse unchanged, with the
// values their files give and the defaults for the rest.
func TestExampleConfigs(t *testing.T) {
	files, _ := filepath.Glob("../examples/configs/*.toml")
	if len(files) < 4 {
		t.Fatalf("found %d example configs, want the 4 Lab examples", len(files))
	}
	for _, f := range files {
		c, err := Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.ValidateEnvs(testEnvCheck); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	c, err := Load("../examples/configs/alphabet-sort.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "Qwen/Qwen3-4B-Instruct-2507" || c.BatchSize != 512 || c.RolloutsPerExample != 8 || c.MaxSteps != 100 {
		t.Errorf("core keys: %+v", c)
	}
	if c.Optimizer.LR != 1e-4 || c.LoRA.Alpha != 64 || c.LoRA.Rank != 16 {
		t.Errorf("learning_rate/lora_alpha aliases: lr %v alpha %v rank %v", c.Optimizer.LR, c.LoRA.Alpha, c.LoRA.Rank)
	}
	e := c.Env[0]
	if e.ID != "primeintellect/alphabet-sort" || e.Weight != 1 || e.Name != e.ID || e.Args["similarity_power"] != int64(8) || e.Args["power_per_turn"] != false {
		t.Errorf("env: %+v", e)
	}
	if c.Sampling.MaxTokens != 768 || c.Sampling.Temperature != 1 || !c.Wandb.On() {
		t.Errorf("sampling/wandb: %+v %+v", c.Sampling, c.Wandb)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %q", c.Warnings)
	}

	g, err := Load("../examples/configs/gsm8k.toml")
	if err != nil {
		t.Fatal(err)
	}
	if g.Eval.Interval != 25 || g.Eval.NumExamples != 100 || g.Eval.SkipFirstStep || len(g.Eval.Env) != 1 || g.Eval.Env[0].Args["num_eval_examples"] != int64(200) {
		t.Errorf("eval: %+v", g.Eval)
	}

	w, err := Load("../examples/configs/wordle.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"wordle.toml:8: deprecated (prime lab doctor: `max_async_level` is outdated; remove it from Lab configs.); accepted and ignored locally because",
		"wordle.toml:9: deprecated (prime lab doctor: `oversampling_factor` is outdated; remove it from Lab configs.); used here: a step refills the groups online difficulty filtering drops",
	}
	if len(w.Warnings) != len(want) {
		t.Fatalf("wordle warnings: %q", w.Warnings)
	}
	for i := range want {
		if !strings.Contains(w.Warnings[i], want[i]) {
			t.Errorf("warning %d = %q, want it to contain %q", i, w.Warnings[i], want[i])
		}
	}
	if w.Sampling.EnableThinking == nil || !*w.Sampling.EnableThinking {
		t.Errorf("enable_thinking not read")
	}
}

var wantLine = regexp.MustCompile(`^# want (\d+): (.*)$`)

// TestBadConfigs: every malformed config fails with one line that names
// the file (and the line, when the problem has one) and says the fix;
// none panics. Expectations are the first line of each file.
func TestBadConfigs(t *testing.T) {
	files, _ := filepath.Glob("testdata/configs/bad/*.toml")
	if len(files) < 20 {
		t.Fatalf("%d malformed configs, want at least 20", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			line, want := readWant(t, f)
			c, err := Load(f)
			if err == nil {
				err = c.ValidateEnvs(testEnvCheck)
			}
			if err == nil {
				t.Fatalf("no error, want %q", want)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines:\n%s", msg)
			}
			prefix := f + ": "
			if line > 0 {
				prefix = fmt.Sprintf("%s:%d:", f, line)
			}
			if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, want) {
				t.Errorf("error\n  %s\nwant prefix %q and text %q", msg, prefix, want)
			}
		})
	}
}

func readWant(t *testing.T, path string) (int, string) {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Scan()
	m := wantLine.FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("%s: first line must be \"# want LINE: text\"", path)
	}
	n, _ := strconv.Atoi(m[1])
	return n, m[2]
}

// TestDoctorDeprecations: the keys prime lab doctor calls deprecated or
// outdated (prime-cli's DEPRECATED_CONFIG_FIELDS) are accepted, each with
// one warning that repeats the doctor's words; before, two of them
// (trajectoryStrategy, max_off_policy_steps) failed as unknown keys.
func TestDoctorDeprecations(t *testing.T) {
	c, err := Parse([]byte(`model = "Qwen/Qwen3-0.6B"
trajectory_strategy = "interleaved"
trajectoryStrategy = "branching"
env_file = ["secrets.env"]
oversampling_factor = 2.0
max_async_level = 2
max_off_policy_steps = 2

[[env]]
id = "reverse-text"
`), "lab.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"lab.toml:2: deprecated (prime lab doctor: `trajectory_strategy` is deprecated and ignored.)",
		"lab.toml:3: deprecated (prime lab doctor: `trajectoryStrategy` is deprecated and ignored.)",
		"lab.toml:4: deprecated (prime lab doctor: `env_file` is deprecated; use `env_files`.)",
		"lab.toml:5: deprecated (prime lab doctor: `oversampling_factor` is outdated; remove it from Lab configs.)",
		"lab.toml:6: deprecated (prime lab doctor: `max_async_level` is outdated; remove it from Lab configs.)",
		"lab.toml:7: deprecated (prime lab doctor: `max_off_policy_steps` is outdated; remove it from Lab configs.)",
	}
	if len(c.Warnings) != len(want) {
		t.Fatalf("warnings %q", c.Warnings)
	}
	for i, w := range want {
		if !strings.HasPrefix(c.Warnings[i], w+"; accepted and ignored locally because ") || strings.Contains(c.Warnings[i], "\n") {
			t.Errorf("warning %d = %q, want %q...", i, c.Warnings[i], w)
		}
	}
}
