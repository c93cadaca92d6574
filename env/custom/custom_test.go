package custom

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
)

const capitalsTOML = `id = "test-org/capitals"
description = "name the capital"
system_prompt = "Answer inside <answer> tags."
prompt_template = "What is the capital of {country}? Reply as \\boxed{} would be wrong; use <answer>."
parser = "xml:answer"

[dataset]
train = "data/train.jsonl"
eval = "data/test.jsonl"
question_field = "country"
answer_field = "capital"

[[rubric]]
type = "exact"
name = "correct_answer"
weight = 0.8

[[rubric]]
type = "format"
weight = 0.2
`

func capitalsDir(t *testing.T) string {
	dir := t.TempDir()
	envtest.WriteFile(t, dir, "environment.toml", capitalsTOML)
	envtest.WriteFile(t, dir, "data/train.jsonl", `{"country": "France", "capital": "Paris"}
{"country": "Japan", "capital": "Tokyo"}
`)
	envtest.WriteFile(t, dir, "data/test.jsonl", `{"country": "Peru", "capital": "Lima"}
`)
	return dir
}

func TestCustomEnvironmentRoundTrip(t *testing.T) {
	home := t.TempDir()
	t.Setenv("GRPO_HOME", home)
	t.Chdir(t.TempDir()) // no ./environments here
	src := capitalsDir(t)
	dest, err := Install(src, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, "environments", "test-org", "capitals"); dest != want {
		t.Errorf("installed in %s, want %s", dest, want)
	}
	if _, err := Install(src, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("second install: %v", err)
	}
	if _, err := Install(src, true); err != nil {
		t.Errorf("forced reinstall: %v", err)
	}
	os.RemoveAll(src) // the installed copy must stand alone
	found := false
	for _, s := range env.List() {
		found = found || s.ID == "test-org/capitals" && s.Dir == dest
	}
	if !found {
		t.Error("List lacks the installed environment")
	}
	e, err := env.New("test-org/capitals", map[string]any{"num_train_examples": 1})
	if err != nil {
		t.Fatal(err)
	}
	train, err := e.Examples("train")
	if err != nil || len(train) != 1 {
		t.Fatalf("train %d, %v", len(train), err)
	}
	ex := train[0]
	if ex.Prompt[0].Content != "Answer inside <answer> tags." || ex.Prompt[1].Content != `What is the capital of France? Reply as \boxed{} would be wrong; use <answer>.` || ex.Answer != "Paris" {
		t.Errorf("example %+v", ex)
	}
	for completion, want := range map[string]float64{
		"<answer>Paris</answer>":   1,
		"<answer>Lyon</answer>":    0.2,
		"Paris":                    0,
		"<answer> Paris </answer>": 1,
	} {
		if r := envtest.ScoreTurns(e, ex, completion); !envtest.Near(r.Reward, want) {
			t.Errorf("%q scored %v, want %v (%v)", completion, r.Reward, want, r.Metrics)
		}
	}
	eval, err := e.Examples("eval")
	if err != nil || len(eval) != 1 || eval[0].Answer != "Lima" {
		t.Errorf("eval %v %v", eval, err)
	}
}

func TestCustomEnvironmentErrors(t *testing.T) {
	for _, c := range []struct {
		name, edit, want string
	}{
		{"unknown key", `parser = "xml:answer"`, `environment.toml:5:1: unknown key "parsr"`},
		{"wrong type", `weight = 0.8`, `environment.toml:16`},
		{"bad parser", `parser = "xml:answer"`, `environment.toml:5: parser "regex" is unknown`},
		{"bad rubric type", `type = "exact"`, `environment.toml:14: [[rubric]] 1: type "exactly" is unknown`},
		{"escaping path", `train = "data/train.jsonl"`, `environment.toml:8: [dataset] train = "../x.jsonl" must be a path inside`},
		{"no placeholder", `prompt_template = "What is the capital of {country}? Reply as \\boxed{} would be wrong; use <answer>."`, `environment.toml:4: prompt_template: "Capital?" has no {field}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := capitalsDir(t)
			repl := map[string]string{
				"unknown key":     `parsr = "xml:answer"`,
				"wrong type":      `weight = "heavy"`,
				"bad parser":      `parser = "regex"`,
				"bad rubric type": `type = "exactly"`,
				"escaping path":   `train = "../x.jsonl"`,
				"no placeholder":  `prompt_template = "Capital?"`,
			}[c.name]
			envtest.WriteFile(t, dir, "environment.toml", strings.Replace(capitalsTOML, c.edit, repl, 1))
			_, err := env.New(dir, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	// Data problems surface on loading, with file:line.
	dir := capitalsDir(t)
	envtest.WriteFile(t, dir, "data/train.jsonl", "{\"country\": \"France\", \"capital\": \"Paris\"}\n{\"nation\": \"Spain\", \"capital\": \"Madrid\"}\n")
	e, err := env.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Examples("train"); err == nil || !strings.Contains(err.Error(), `train.jsonl:2: no field "country"`) {
		t.Errorf("missing field: %v", err)
	}
	if _, err := Install(dir, false); err == nil || !strings.Contains(err.Error(), "train.jsonl:2") {
		t.Errorf("install of broken data: %v", err)
	}
	os.Remove(filepath.Join(dir, "data/test.jsonl"))
	envtest.WriteFile(t, dir, "environment.toml", strings.Replace(capitalsTOML, `eval = "data/test.jsonl"`, "", 1))
	e, _ = env.New(dir, nil)
	if _, err := e.Examples("eval"); !errors.Is(err, env.ErrNoSplit) {
		t.Errorf("no eval file: %v", err)
	}
}

// A command rubric that crashes, hangs or prints garbage scores 0 with a
// counted error; the run goes on.
func TestCustomCommandRubricFailures(t *testing.T) {
	dir := capitalsDir(t)
	envtest.WriteFile(t, dir, "reward.sh", `read line
case "$line" in
*Tokyo*) echo garbage ;;
*Crash*) exit 3 ;;
*Hang*) sleep 5 ;;
*) echo 1 ;;
esac
`)
	toml := strings.Replace(capitalsTOML, "[[rubric]]\ntype = \"format\"\nweight = 0.2\n",
		"[[rubric]]\ntype = \"command\"\nname = \"script\"\nargv = [\"sh\", \"reward.sh\"]\ntimeout = \"300ms\"\nweight = 0.2\n", 1)
	envtest.WriteFile(t, dir, "environment.toml", toml)
	e, err := env.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ex := env.Example{Answer: "Paris"}
	if r := envtest.ScoreTurns(e, ex, "<answer>Paris</answer>"); !envtest.Near(r.Reward, 1) {
		t.Errorf("good: %v %v", r.Reward, r.Errors)
	}
	for _, bad := range []string{"<answer>Tokyo</answer>", "<answer>Crash</answer>", "<answer>Hang</answer>"} {
		r := envtest.ScoreTurns(e, ex, bad)
		if r.Metrics["errors/script"] != 1 || r.Metrics["script"] != 0 || len(r.Errors) != 1 {
			t.Errorf("%s: %v %v", bad, r.Metrics, r.Errors)
		}
	}
}
