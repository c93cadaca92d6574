package rubric

import (
	"context"
	"fmt"
	"strings"
)

// XMLFormatScore scores one message as verifiers' XMLParser format reward
// does (verifiers 8d4b33247, get_format_reward_func), for fields given as
// lists of alternative tag names:
//
//   - 0.4 × the fraction of fields present (a field counts when one of its
//     tags parses, or when its opening or closing tag merely appears),
//     given only when some field parses;
//   - 0.2 for "proper spacing", which verifiers grants every message (its
//     check compares two parses that always agree);
//   - 0.2 when the stripped message starts with a tag of the first field;
//   - 0.2 when it ends with a closing tag of the last field.
//
// So a message without any tag scores 0.2, "Think... <guess>[x]</guess>"
// 0.8, and "<guess>[x]</guess>" alone 1.
func XMLFormatScore(text string, fields ...[]string) float64 {
	if len(fields) == 0 {
		return 0
	}
	anyParsed, present := false, 0
	for _, alts := range fields {
		seen := false
		for _, tag := range alts {
			if _, ok := XMLTag(text, tag); ok {
				anyParsed, seen = true, true
			} else if strings.Contains(text, "<"+tag+">") || strings.Contains(text, "</"+tag+">") {
				seen = true
			}
		}
		if seen {
			present++
		}
	}
	score := 0.2
	if anyParsed {
		score += 0.4 * float64(present) / float64(len(fields))
	}
	stripped := PyStrip(text)
	for _, tag := range fields[0] {
		if strings.HasPrefix(stripped, "<"+tag+">") {
			score += 0.2
			break
		}
	}
	for _, tag := range fields[len(fields)-1] {
		if strings.HasSuffix(stripped, "</"+tag+">") {
			score += 0.2
			break
		}
	}
	return score
}

// XMLFormatReward is verifiers' XMLParser(fields).get_format_reward_func()
// for plain (single-tag) fields: XMLFormatScore averaged over the
// assistant turns, 0 when there are none.
func XMLFormatReward(fields ...string) (Func, error) {
	if len(fields) == 0 {
		return nil, fmt.Errorf("rubric: XMLFormatReward needs at least one field name")
	}
	alts := make([][]string, len(fields))
	for i, f := range fields {
		if f == "" || strings.ContainsAny(f, "<>/ \t\n") {
			return nil, fmt.Errorf("rubric: XMLFormatReward field %q is not a bare tag name; write \"answer\", not \"<answer>\"", f)
		}
		alts[i] = []string{f}
	}
	return func(_ context.Context, r Rollout) (Score, error) {
		turns := r.AssistantTurns()
		if len(turns) == 0 {
			return Score{}, nil
		}
		sum := 0.0
		for _, t := range turns {
			sum += XMLFormatScore(t, alts...)
		}
		return Score{Value: sum / float64(len(turns))}, nil
	}, nil
}

// MaybeThinkAnswer is the answer verifiers' MathRubric reads from a
// completion: its last assistant message, the text after its last
// "</think>" (MaybeThinkParser), then the last \boxed{} of that
// (extract_boxed_answer, strict). Earlier turns are never read.
func MaybeThinkAnswer(r Rollout) (string, bool) {
	turns := r.AssistantTurns()
	if len(turns) == 0 {
		return "", false
	}
	return BoxedAnswer(StripThink(turns[len(turns)-1]))
}
