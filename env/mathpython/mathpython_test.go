package mathpython

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/sandboxtest"
)

// A package the sandbox lacks is refused at construction with one line
// naming it, before any sandbox is needed.
func TestMathPythonRefusesPackages(t *testing.T) {
	_, err := env.New("math-python", map[string]any{"pip_install_packages": "numpy pandas"})
	if err == nil || !strings.Contains(err.Error(), `"pandas"`) || !strings.Contains(err.Error(), "numpy, sympy and scipy only") {
		t.Fatalf("err = %v", err)
	}
}

// The system prompt is verifiers' for the packages, and the python tool
// keeps state across one episode's calls but not into the next episode.
func TestMathPythonEpisodeInterpreter(t *testing.T) {
	sandboxtest.Require(t)
	e, err := env.New("math-python", map[string]any{"dataset_name": "synthetic", "num_train_examples": 2, "pip_install_packages": "sympy", "pool_size": 1})
	if err != nil {
		t.Fatal(err)
	}
	exs, err := e.Examples("train")
	if err != nil || len(exs) != 2 {
		t.Fatalf("%d examples, %v", len(exs), err)
	}
	if got := exs[0].Prompt[0].Content; got != "Use Python for all calculations. Give your answer inside \\boxed{}.\n\nIn addition to the Python standard library, you have access to: sympy." {
		t.Errorf("system prompt %q", got)
	}
	call := func(ep env.Episode, code string) string {
		t.Helper()
		tools := ep.(env.ToolEpisode).Tools()
		if len(tools) != 1 || tools[0].Name() != "python" {
			t.Fatalf("episode tools %v", tools)
		}
		args, _ := json.Marshal(map[string]string{"code": code})
		out, err := tools[0].Call(context.Background(), args)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ep := e.NewEpisode(exs[0])
	if out := call(ep, "x = 6*7\nprint(x)"); out != "42" {
		t.Errorf("print: %q", out)
	}
	if out := call(ep, "x + 1"); out != "Out[2]: 43" {
		t.Errorf("state across calls: %q", out)
	}
	if out := call(ep, "1/0"); !strings.Contains(out, "ZeroDivisionError") {
		t.Errorf("error: %q", out)
	}
	ep.(io.Closer).Close()
	args, _ := json.Marshal(map[string]string{"code": "x"})
	if _, err := ep.(env.ToolEpisode).Tools()[0].Call(context.Background(), args); err == nil || !strings.Contains(err.Error(), "episode has ended") {
		t.Errorf("a call after Close: %v", err)
	}
	next := e.NewEpisode(exs[1])
	defer next.(io.Closer).Close()
	if out := call(next, "x"); !strings.Contains(out, "NameError") {
		t.Errorf("the next episode sees the last one's variables: %q", out)
	}
}
