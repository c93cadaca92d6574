package custom

import (
	"strings"

	"github.com/grpo-dev/grpo/rubric"
)

// answerParser pulls the final answer out of one assistant turn.
type answerParser func(text string) (string, bool)

// parserFor returns the parser an environment.toml names: "xml:TAG" (the
// first <TAG>…</TAG> of a turn, as verifiers' XMLParser), "boxed" (the
// last \boxed{}, strict as verifiers' extract_boxed_answer), "hash"
// (after GSM8K's "####"), "think" (what follows </think>) or "none" (the
// whole turn, trimmed). The kind was validated when the config was read.
func parserFor(kind string) answerParser {
	switch {
	case strings.HasPrefix(kind, "xml:"):
		tag := strings.TrimPrefix(kind, "xml:")
		return func(t string) (string, bool) { return rubric.XMLTag(t, tag) }
	case kind == "boxed":
		return rubric.BoxedAnswer
	case kind == "hash":
		return rubric.HashAnswer
	case kind == "think":
		return func(t string) (string, bool) { return rubric.StripThink(t), true }
	}
	return func(t string) (string, bool) { return rubric.PyStrip(t), true }
}
