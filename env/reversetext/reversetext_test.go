package reversetext

import (
	"context"
	"reflect"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/rubric"
)

func TestReverseText(t *testing.T) {
	e := envtest.NewEnv(t, "primeintellect/reverse-text", map[string]any{"dataset_name": "synthetic", "num_train_examples": 5, "num_eval_examples": 3})
	train, err := e.Examples("train")
	if err != nil || len(train) != 5 {
		t.Fatalf("train: %d examples, %v", len(train), err)
	}
	again, _ := envtest.NewEnv(t, "reverse_text", map[string]any{"dataset_name": "synthetic", "num_train_examples": 5}).Examples("train")
	if !reflect.DeepEqual(train, again) {
		t.Error("same seed gave different examples")
	}
	other, _ := envtest.NewEnv(t, "reverse-text", map[string]any{"dataset_name": "synthetic", "num_train_examples": 5, "seed": 1}).Examples("train")
	if reflect.DeepEqual(train, other) {
		t.Error("seed 1 gave the same examples as seed 0")
	}
	eval, _ := e.Examples("eval")
	if len(eval) != 3 || eval[0].Prompt[1].Content == train[0].Prompt[1].Content {
		t.Errorf("eval split %d examples, first equals train's", len(eval))
	}
	ex := train[0]
	if ex.Prompt[0].Content != reverseTextSystemPrompt || ex.Answer != reverseRunes(ex.Prompt[1].Content) {
		t.Fatalf("example %+v", ex)
	}
	if r := envtest.ScoreTurns(e, ex, "<reversed_text>\n"+ex.Answer+"\n</reversed_text>"); r.Reward != 1 || r.Metrics["lcs"] != 1 {
		t.Errorf("perfect reversal scored %+v", r)
	}
	// Partial: the text itself instead of its reversal scores the difflib ratio.
	partial := envtest.ScoreTurns(e, ex, "<reversed_text>"+ex.Prompt[1].Content+"</reversed_text>").Reward
	if want := rubric.Ratio(ex.Prompt[1].Content, ex.Answer); !envtest.Near(partial, want) || partial <= 0 || partial >= 1 {
		t.Errorf("partial scored %v, want ratio %v in (0,1)", partial, want)
	}
	if r := envtest.ScoreTurns(e, ex, ex.Answer); r.Reward != 0 {
		t.Errorf("untagged answer scored %v; Prime's parser finds no answer", r.Reward)
	}
	if _, err := e.Examples("test"); err == nil {
		t.Error("unknown split accepted")
	}
	if got := reverseRunes("añb→c"); got != "c→bña" {
		t.Errorf("reverseRunes = %q", got)
	}
}

// TestReverseTextVersions: v1 reads the last reply only, under lcs; v0
// reads the latest turn with a tag, under lcs_reward_func.
func TestReverseTextVersions(t *testing.T) {
	two := rubric.Rollout{Answer: "olleh", Completion: []chat.Message{
		{Role: "assistant", Content: "<reversed_text>olleh</reversed_text>"}, {Role: "user", Content: "again"}, {Role: "assistant", Content: "done"}}}
	v1 := envtest.NewEnv(t, "reverse-text", map[string]any{"dataset_name": "synthetic"})
	v0 := envtest.NewEnv(t, "reverse-text", map[string]any{"dataset_name": "synthetic"}, env.WithVersion("v0"))
	if r := v1.Rubric().Score(context.Background(), two); r.Reward != 0 || len(r.Metrics) != 1 {
		t.Errorf("v1: %+v", r)
	}
	if r := v0.Rubric().Score(context.Background(), two); r.Reward != 1 || r.Metrics["lcs_reward_func"] != 1 {
		t.Errorf("v0: %+v", r)
	}
}
