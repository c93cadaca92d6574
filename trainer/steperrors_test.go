package trainer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
)

// failingRubricEnv is an environment whose rubric fails on every rollout.
type failingRubricEnv struct {
	env.Environment
	rb *rubric.Rubric
}

func (f failingRubricEnv) Rubric() *rubric.Rubric { return f.rb }

// TestRubricErrorsShowAndStop: a rubric that fails on every rollout shows
// on every step line with the count and the first cause, and the run stops
// after max_error_steps such steps with one line saying why and the fix.
func TestRubricErrorsShowAndStop(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeRunFixture(t, dir, 10, 0)
	inner, err := env.New(filepath.Join(dir, "env"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := rubric.Weighted(rubric.Term{Name: "judge", Weight: 1, Func: func(context.Context, rubric.Rollout) (rubric.Score, error) {
		return rubric.Score{}, errors.New("judge server refused the connection")
	}})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(cfgPath)
	// Name the environment by its own id, so the Go one replaces the block.
	doc := strings.Replace(string(text), "id = \""+filepath.Join(dir, "env")+"\"", "id = \""+inner.ID()+"\"", 1)
	doc = "max_error_steps = 2\n" + doc
	cfg, err := config.Parse([]byte(doc), "run.toml")
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	res, err := New(cfg, WithOutput(filepath.Join(dir, "run")), WithEnvironment(failingRubricEnv{inner, rb}), WithProgress(&progress)).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "step 2: every rollout of the last 2 steps failed (first: ") ||
		!strings.Contains(err.Error(), "judge server refused the connection") || !strings.Contains(err.Error(), "raise max_error_steps") {
		t.Fatalf("want a stop at step 2 naming the cause, got %v", err)
	}
	if res.Steps != 2 {
		t.Errorf("stopped after step %d, want 2", res.Steps)
	}
	lines := strings.Split(progress.String(), "\n")
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "step ") {
			n++
			if !strings.Contains(l, "errors 16/16 rollouts (first: ") || !strings.Contains(l, "judge server refused") {
				t.Errorf("step line hides the errors: %q", l)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d step lines:\n%s", n, progress.String())
	}
}
