package gepa

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
)

// TestSystemPromptArgument: what GEPA does to each example to try a
// candidate (WithSystemPrompt) is what the environments' system_prompt
// argument does, so the prompt it finds means in grpo train and grpo eval
// (given as args = { system_prompt = "..." }) what it meant here. Checked
// on every split of each builtin that has the argument and builds without
// network, and on a custom environment.toml one.
func TestSystemPromptArgument(t *testing.T) {
	custom := filepath.Join(t.TempDir(), "custom")
	if err := tinymodel.WriteReverseEnv(custom, 4); err != nil {
		t.Fatal(err)
	}
	const found = "Reverse the word letter by letter. Answer inside <reversed_text> tags and nothing else."
	for _, c := range []struct {
		id   string
		args map[string]any
	}{
		{"reverse-text", map[string]any{"dataset_name": "synthetic", "num_train_examples": 5, "num_eval_examples": 3}},
		{"math", map[string]any{"dataset_name": "synthetic", "num_train_examples": 5, "num_eval_examples": 3}},
		{"wordle", map[string]any{"num_train_examples": 5, "num_eval_examples": 3}},
		{custom, map[string]any{}},
	} {
		base, err := env.New(c.id, c.args)
		if err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		withArg := map[string]any{"system_prompt": found}
		for k, v := range c.args {
			withArg[k] = v
		}
		tuned, err := env.New(c.id, withArg)
		if err != nil {
			t.Fatalf("%s with system_prompt: %v", c.id, err)
		}
		for _, split := range []string{"train", "eval"} {
			a, err := base.Examples(split)
			if err != nil {
				t.Fatal(err)
			}
			b, err := tuned.Examples(split)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) == 0 || len(a) != len(b) {
				t.Fatalf("%s %s: %d and %d examples", c.id, split, len(a), len(b))
			}
			for i := range a {
				if got := WithSystemPrompt(a[i].Prompt, found); !reflect.DeepEqual(got, b[i].Prompt) {
					t.Errorf("%s %s[%d]: GEPA's substitution gives %+v, the system_prompt argument %+v", c.id, split, i, got, b[i].Prompt)
				}
			}
		}
	}
}

// TestWithSystemPrompt: replaced, added when missing, dropped when empty;
// the input is not modified.
func TestWithSystemPrompt(t *testing.T) {
	p := []chat.Message{{Role: "system", Content: "old"}, {Role: "user", Content: "q"}}
	if got := WithSystemPrompt(p, "new"); got[0].Content != "new" || len(got) != 2 || p[0].Content != "old" {
		t.Errorf("replace: %+v (input now %+v)", got, p)
	}
	if got := WithSystemPrompt(p[1:], "new"); len(got) != 2 || !reflect.DeepEqual(got[0], chat.Message{Role: "system", Content: "new"}) {
		t.Errorf("add: %+v", got)
	}
	if got := WithSystemPrompt(p, ""); len(got) != 1 || got[0].Role != "user" {
		t.Errorf("drop: %+v", got)
	}
}

// echoGen answers every conversation with the text of its user message
// reversed when the system prompt says "Reverse", else with "?": a
// deterministic generator standing in for a model.
type echoGen struct {
	mu       sync.Mutex
	systems  []string
	inFlight int
	most     int
}

func (g *echoGen) Generate(ctx context.Context, conv []chat.Message, p sampler.Params) (rollout.Generation, error) {
	g.mu.Lock()
	g.systems = append(g.systems, SystemPromptOf(conv))
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	g.mu.Unlock()
	defer func() { g.mu.Lock(); g.inFlight--; g.mu.Unlock() }()
	if !strings.Contains(SystemPromptOf(conv), "Reverse") {
		return rollout.Generation{Content: "?", FinishReason: "stop"}, nil
	}
	u := []rune(conv[len(conv)-1].Content)
	for i, j := 0, len(u)-1; i < j; i, j = i+1, j-1 {
		u[i], u[j] = u[j], u[i]
	}
	return rollout.Generation{Content: "<reversed_text>" + string(u) + "</reversed_text>", FinishReason: "stop"}, nil
}

// TestEnvStudent: the student plays the examples under the candidate
// prompt (the generator sees it as the system message), scores them with
// the environment's rubric, and shows the teacher the input without the
// system prompt, the output and the rubric's feedback.
func TestEnvStudent(t *testing.T) {
	e, err := env.New("reverse-text", map[string]any{"dataset_name": "synthetic", "num_train_examples": 6, "num_eval_examples": 4})
	if err != nil {
		t.Fatal(err)
	}
	gen := &echoGen{}
	s, notes, err := NewEnvStudent(rollout.RemoteEngine{Gen: gen, Concurrency: 2}, e, 6, 10)
	if err != nil {
		t.Fatal(err)
	}
	if s.TrainSize() != 6 || s.ValSize() != 4 || len(notes) != 1 || !strings.Contains(notes[0], "fewer than num_val = 10; using 4") {
		t.Fatalf("sizes %d/%d, notes %q", s.TrainSize(), s.ValSize(), notes)
	}
	if !strings.HasPrefix(s.SeedPrompt(), "Reverse the text character-by-character") {
		t.Errorf("seed prompt %q, want reverse-text's own", s.SeedPrompt())
	}
	s.MaxConcurrent, s.StateColumns = 2, []string{"turns"}
	good, err := s.Evaluate(context.Background(), Request{Prompt: "Reverse it.", Split: Val, IDs: []int{3, 0}})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := s.Evaluate(context.Background(), Request{Prompt: "Be creative.", Split: Train, IDs: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(good) != 2 || good[0].Score != 1 || good[1].Score != 1 || bad[0].Score >= 0.5 {
		t.Fatalf("scores %+v %+v", good, bad)
	}
	if want := []string{"Reverse it.", "Reverse it.", "Be creative."}; !reflect.DeepEqual(gen.systems, want) {
		t.Errorf("system prompts the model saw: %q, want %q", gen.systems, want)
	}
	if gen.most > 2 {
		t.Errorf("%d episodes at once, max_concurrent 2", gen.most)
	}
	val := s.Val[3]
	if good[0].Input != val.Prompt[len(val.Prompt)-1].Content || strings.Contains(good[0].Input, "Reverse the text") {
		t.Errorf("input %q", good[0].Input)
	}
	if fb := bad[0].Feedback; !strings.HasPrefix(fb, "reward 0.") || !strings.Contains(fb, "lcs") || strings.Contains(fb, "lcs_reward_func") ||
		!strings.Contains(fb, "expected answer: "+s.Train[1].Answer) || !strings.Contains(fb, "turns: 1") || bad[0].Output != "?" {
		t.Errorf("feedback %q, output %q", fb, bad[0].Output)
	}
	if _, err := s.Evaluate(context.Background(), Request{Prompt: "x", Split: Val, IDs: []int{4}}); err == nil {
		t.Error("an id past the set was played")
	}
}

// TestPromptFileFeedsEnvironments: the system_prompt.txt a run writes,
// given to an environment (wordle's path_to_system_prompt reads the file
// as it is; system_prompt takes its text), is the system message of every
// example: the prompt GEPA found, unchanged.
func TestPromptFileFeedsEnvironments(t *testing.T) {
	dir := t.TempDir()
	res, err := Run(context.Background(), levelStudent(), failureTeacher(), levelOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, PromptFile)
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   string
		args map[string]any
	}{
		{"wordle", map[string]any{"path_to_system_prompt": file, "num_eval_examples": 2}},
		{"reverse-text", map[string]any{"system_prompt": string(text), "dataset_name": "synthetic", "num_eval_examples": 2}},
	} {
		e, err := env.New(c.id, c.args)
		if err != nil {
			t.Fatal(err)
		}
		exs, err := e.Examples("eval")
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range exs {
			if got := SystemPromptOf(ex.Prompt); got != res.Best.Text {
				t.Errorf("%s: system message %q, want the best prompt %q", c.id, got, res.Best.Text)
			}
		}
	}
}
