package trainer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// TestServerErrorsNameTheServer: when the inference server refuses every
// completion (an HTTP 400 per request, which fails each rollout alone),
// the stop after max_error_steps names the server from [inference], not
// the environment or its rubric (issue 27).
func TestServerErrorsNameTheServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"object": "list", "data": [{"id": "base"}]}`)
		case "/v1/completions":
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error": {"message": "this server takes no prompt ids"}}`)
		default: // adapter loads and unloads
			fmt.Fprint(w, `{}`)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfgPath := writeRunFixture(t, dir, 10, 0)
	text, _ := os.ReadFile(cfgPath)
	doc := fmt.Sprintf("max_error_steps = 1\n%s\n[inference]\nurl = %q\nmodel = \"base\"\n", text, srv.URL+"/v1")
	cfg, err := config.Parse([]byte(doc), "run.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(cfg, WithOutput(filepath.Join(dir, "run"))).Run(context.Background())
	want := fmt.Sprintf(`failed generating on the inference server ([inference] url = "%s/v1"; first: `, srv.URL)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "this server takes no prompt ids") ||
		strings.Contains(err.Error(), "fix the environment") {
		t.Fatalf("want a stop naming the server, got %v", err)
	}
}
