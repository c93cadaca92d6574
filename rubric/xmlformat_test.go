package rubric

import (
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

// Expected values follow verifiers' XMLParser format reward; the wordle
// cases of env/testdata/verifiers_golden.jsonl check it end to end.
func TestXMLFormatScore(t *testing.T) {
	guess := [][]string{{"guess"}}
	for text, want := range map[string]float64{
		"<guess>[crane]</guess>":            1,
		"  <guess>\n[crane]\n</guess>\n":    1,
		"Let me think.\n<guess>[x]</guess>": 0.8,
		"<guess>[x]</guess> done":           0.8,
		"I pick <guess>[x]</guess> now":     0.6,
		"no tags at all":                    0.2,
		"<guess>unclosed":                   0.4, // starts with the tag, which never parses
	} {
		if got := XMLFormatScore(text, guess...); !near(got, want) {
			t.Errorf("XMLFormatScore(%q) = %v, want %v", text, got, want)
		}
	}
	two := [][]string{{"think"}, {"answer"}}
	if got := XMLFormatScore("<think>a</think>\n<answer>b</answer>", two...); !near(got, 1) {
		t.Errorf("two fields, both present: %v, want 1", got)
	}
	if got := XMLFormatScore("<think>a</think> and <answer>b", two...); !near(got, 0.2+0.4+0.2) {
		t.Errorf("two fields, answer unclosed: %v, want 0.8", got)
	}
	f, err := XMLFormatReward("guess")
	if err != nil {
		t.Fatal(err)
	}
	r := Rollout{Completion: []chat.Message{
		{Role: "assistant", Content: "<guess>[a]</guess>"},
		{Role: "user", Content: "feedback"},
		{Role: "assistant", Content: "no tag"},
	}}
	if s, _ := f(t.Context(), r); !near(s.Value, 0.6) {
		t.Errorf("XMLFormatReward over two turns = %v, want 0.6", s.Value)
	}
	if _, err := XMLFormatReward("<guess>"); err == nil {
		t.Error("XMLFormatReward accepted a tag written with angle brackets")
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

func TestMaybeThinkAnswer(t *testing.T) {
	for text, want := range map[string]string{
		`<think>\boxed{1}</think> \boxed{2}`: "2",
		`<think>\boxed{1}</think> so 2`:      "",
		`\boxed{3}`:                          "3",
	} {
		got, _ := MaybeThinkAnswer(SingleTurn("q", text, ""))
		if got != want {
			t.Errorf("MaybeThinkAnswer(%q) = %q, want %q", text, got, want)
		}
	}
}
