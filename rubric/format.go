package rubric

import (
	"context"
	"fmt"
	"strings"
)

// TagFormat scores how well text uses the expected XML tags: the fraction of
// tags that appear exactly once as "<tag>" followed later by "</tag>".
// Missing, repeated or reversed tags count as not well-formed.
func TagFormat(text string, tags ...string) float64 {
	if len(tags) == 0 {
		return 0
	}
	good := 0
	for _, tag := range tags {
		open, close := "<"+tag+">", "</"+tag+">"
		if strings.Count(text, open) == 1 && strings.Count(text, close) == 1 &&
			strings.Index(text, open) < strings.Index(text, close) {
			good++
		}
	}
	return float64(good) / float64(len(tags))
}

// FormatReward is a reward function: TagFormat over the tags, averaged over
// the assistant turns of the completion (0 when there are none). Per-tag
// metrics are not reported; use TagFormat directly for those.
func FormatReward(tags ...string) (Func, error) {
	if len(tags) == 0 {
		return nil, fmt.Errorf("rubric: FormatReward needs at least one tag name")
	}
	for _, t := range tags {
		if t == "" || strings.ContainsAny(t, "<>/ \t\n") {
			return nil, fmt.Errorf("rubric: FormatReward tag %q is not a bare tag name; write \"answer\", not \"<answer>\"", t)
		}
	}
	tags = append([]string(nil), tags...)
	return func(_ context.Context, r Rollout) (Score, error) {
		turns := r.AssistantTurns()
		if len(turns) == 0 {
			return Score{}, nil
		}
		sum := 0.0
		for _, t := range turns {
			sum += TagFormat(t, tags...)
		}
		return Score{Value: sum / float64(len(turns))}, nil
	}, nil
}

// FollowsThinkFormat reports whether text is "<think>...</think>answer": it
// starts with <think>, has exactly one <think> and one </think>, and
// something after it, as verifiers' ThinkParser format check requires.
func FollowsThinkFormat(text string) bool {
	return strings.HasPrefix(PyStrip(text), "<think>") &&
		strings.Count(text, "<think>") == 1 &&
		strings.Count(text, "</think>") == 1 &&
		len(text[strings.Index(text, "</think>")+len("</think>"):]) > 0
}
