package eval

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/sandboxtest"
	"github.com/grpo-dev/grpo/internal/scripted"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// TestMathPythonScriptedEpisode plays a math-python episode with a
// scripted policy through the real evaluation path: the model calls
// python (print(6*7)), reads 42 in the tool message, answers \boxed{42}
// and MathRubric scores 1 (the example's answer is set to 42).
func TestMathPythonScriptedEpisode(t *testing.T) {
	sandboxtest.Require(t)
	dir := filepath.Join("..", "testdata", "tokenizer", "qwen3")
	tok, err := tokenizer.LoadFiles(filepath.Join(dir, "tokenizer.json.gz"), filepath.Join(dir, "tokenizer_config.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := env.New("math-python", map[string]any{"dataset_name": "synthetic", "num_eval_examples": 1, "pip_install_packages": "", "pool_size": 1})
	if err != nil {
		t.Fatal(err)
	}
	e := answerIs{inner.(toolEnv), "42"}
	be, err := scripted.New(cpu.New(), tok,
		"<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": \"print(6*7)\"}}\n</tool_call>",
		`Python printed 42, so the answer is \boxed{42}.`)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &model.Config{ModelType: "qwen3", HiddenSize: 16, IntermediateSize: 32, NumLayers: 1, NumHeads: 2,
		NumKVHeads: 1, HeadDim: 8, VocabSize: tok.VocabSize(), RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
	p := sampler.DefaultParams()
	p.MaxTokens = 64
	res, err := runKept(model.NewRandom(cfg, be, 5), tok, e, "math-python",
		Options{NumExamples: -1, RolloutsPerExample: 1, Sampling: p, EnableThinking: new(bool), Batch: DefaultBatch})
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Trajectories[0]
	if tr.Turns != 2 || tr.Reward != 1 || len(tr.Errors) != 0 {
		t.Fatalf("%d turns, reward %v, errors %q, messages %+v; want 2 turns, reward 1", tr.Turns, tr.Reward, tr.Errors, tr.Messages)
	}
	var results []string
	for _, msg := range tr.Messages {
		if msg.Role == "tool" {
			results = append(results, msg.Content)
		}
	}
	if len(results) != 1 || results[0] != "42" {
		t.Errorf("tool results %q, want [42]", results)
	}
	row := res.Rows()[0]
	for k, want := range map[string]float64{"tool_calls": 1, "tool_errors": 0, "tool_calls/python": 1, "correct_answer": 1} {
		if got, ok := row.Metrics[k]; !ok || got != want {
			t.Errorf("metric %s = %v (present %v), want %v; metrics %v", k, got, ok, want, row.Metrics)
		}
	}
	if prompt := tok.Decode(tr.PromptTokens); !strings.Contains(prompt, `"name": "python"`) || !strings.Contains(prompt, "Use Python for all calculations.") {
		t.Errorf("prompt lacks the python tool or the system prompt:\n%s", prompt)
	}
}

// toolEnv is what math-python is: an environment with tools, turn limits
// and episodes holding their own interpreters.
type toolEnv interface {
	env.ToolEnvironment
	env.TurnLimiter
}

// answerIs replaces every example's answer, so the scripted answer is
// right whatever the synthetic problem was.
type answerIs struct {
	toolEnv
	answer string
}

func (a answerIs) Examples(split string) ([]env.Example, error) {
	exs, err := a.toolEnv.Examples(split)
	for i := range exs {
		exs[i].Answer = a.answer
	}
	return exs, err
}
