// Package envtest holds the helpers the environment packages' tests
// share: building an environment, scoring turns, writing files and the
// repository's test datasets.
package envtest

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
)

// GSM8KDir is testdata/gsm8k, whatever package's directory a test runs in.
var GSM8KDir = filepath.Join(repoRoot(), "testdata", "gsm8k")

// repoRoot is found from this file's path: env/internal/envtest.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// NewEnv builds environment id or fails the test.
func NewEnv(t *testing.T, id string, args map[string]any, opts ...env.Option) env.Environment {
	t.Helper()
	e, err := env.New(id, args, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// ScoreTurns scores ex answered with the given assistant turns.
func ScoreTurns(e env.Environment, ex env.Example, turns ...string) rubric.Result {
	r := rubric.Rollout{Prompt: ex.Prompt, Answer: ex.Answer, Info: ex.Info}
	for _, t := range turns {
		r.Completion = append(r.Completion, chat.Message{Role: "assistant", Content: t})
	}
	return e.Rubric().Score(context.Background(), r)
}

// Near compares rewards computed two ways.
func Near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// WriteFile writes body to dir/name, making directories, and returns the path.
func WriteFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
