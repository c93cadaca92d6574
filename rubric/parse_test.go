package rubric

import (
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

// Expected values were produced by verifiers' code under CPython 3.11:
// XMLParser.parse(text) (regex <tag>\s*(.*?)\s*</tag>, DOTALL, first match,
// as parse_answer applies it to each message), ThinkParser.parse and
// extract_hash_answer.
func TestXMLTagMatchesVerifiers(t *testing.T) {
	cases := []struct {
		text, tag, want string
		ok              bool
	}{
		{"<a>x</a>", "a", "x", true},
		{"<a> x </a> <a>\n y\n</a>", "a", "x", true},
		{"<a>x<a>y</a>", "a", "x<a>y", true},
		{"<a>x</a><a>y", "a", "x", true},
		{"no tags", "a", "", false},
		{"<a></a>", "a", "", true},
		{"<a>\x1c z \x1f</a>", "a", "z", true},
		{"<r>  \u00a0 hi</r>", "r", "hi", true},
		{"<reversed_text>\n.dlrow olleh\n</reversed_text>", "reversed_text", ".dlrow olleh", true},
	}
	for _, c := range cases {
		got, ok := XMLTag(c.text, c.tag)
		if got != c.want || ok != c.ok {
			t.Errorf("XMLTag(%q, %q) = %q, %v; want %q, %v", c.text, c.tag, got, ok, c.want, c.ok)
		}
	}
	if got, ok := XMLTagLast("<a> x </a> <a>\n y\n</a>", "a"); got != "y" || !ok {
		t.Errorf("XMLTagLast = %q, %v; want the last pair, y", got, ok)
	}
}

func TestStripThinkMatchesVerifiers(t *testing.T) {
	for in, want := range map[string]string{
		"<think>a</think> b ":  "b",
		"x</think>y</think> z": "z",
		"plain  ":              "plain",
		"<think>unfinished...": "<think>unfinished...",
	} {
		if got := StripThink(in); got != want {
			t.Errorf("StripThink(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHashAnswerMatchesVerifiers(t *testing.T) {
	cases := []struct {
		text, want string
		ok         bool
	}{
		{"a\n#### 72", "72", true},
		{"a #### 1 #### 2", "1", true},
		{"none", "", false},
	}
	for _, c := range cases {
		got, ok := HashAnswer(c.text)
		if got != c.want || ok != c.ok {
			t.Errorf("HashAnswer(%q) = %q, %v; want %q, %v", c.text, got, ok, c.want, c.ok)
		}
	}
}

func TestBoxedAnswer(t *testing.T) {
	cases := []struct {
		text, want string
		ok         bool
	}{
		{`so \boxed{42}.`, "42", true},
		{`\boxed{1} wait, \boxed{\frac{1}{2}}`, `\frac{1}{2}`, true},
		{`\boxed{a} then \fbox{b}`, "a", true}, // verifiers reads \boxed only
		{`\fbox{a} then \boxed{{x}^{2}}`, "{x}^{2}", true},
		{`\fbox{a}`, "", false},
		{`\boxed{unclosed {`, "", false},
		{`\boxed{1} then \boxed{2`, "", false}, // the last \boxed{ is unclosed
		{`no box`, "", false},
		{`\boxed{}`, "", true},
	}
	for _, c := range cases {
		got, ok := BoxedAnswer(c.text)
		if got != c.want || ok != c.ok {
			t.Errorf("BoxedAnswer(%q) = %q, %v; want %q, %v", c.text, got, ok, c.want, c.ok)
		}
	}
}

func TestTagFormat(t *testing.T) {
	cases := []struct {
		text string
		want float64
	}{
		{"<think>a</think><answer>b</answer>", 1},
		{"<think>a</think>b", 0.5},
		{"</answer>b<answer><think>a</think>", 0.5}, // reversed answer tags
		{"<answer>a</answer><answer>b</answer>", 0}, // repeated, no think
		{"", 0},
	}
	for _, c := range cases {
		if got := TagFormat(c.text, "think", "answer"); got != c.want {
			t.Errorf("TagFormat(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	f, err := FormatReward("answer")
	if err != nil {
		t.Fatal(err)
	}
	r := Rollout{Completion: []chat.Message{
		{Role: "assistant", Content: "<answer>1</answer>"},
		{Role: "user", Content: "<answer>ignored env reply"},
		{Role: "assistant", Content: "no tags"},
	}}
	s, err := f(t.Context(), r)
	if err != nil || s.Value != 0.5 {
		t.Errorf("FormatReward over two turns = %v, %v; want 0.5", s.Value, err)
	}
	if _, err := FormatReward("<answer>"); err == nil {
		t.Error("FormatReward accepted a tag written with angle brackets")
	}
}

func TestFollowsThinkFormat(t *testing.T) {
	for text, want := range map[string]bool{
		"<think>x</think>answer":              true,
		"  <think>x</think> answer":           true,
		"<think>x</think>":                    false,
		"answer<think>x</think>answer":        false,
		"<think>x</think><think>y</think>ans": false,
	} {
		if got := FollowsThinkFormat(text); got != want {
			t.Errorf("FollowsThinkFormat(%q) = %v, want %v", text, got, want)
		}
	}
}
