package lab

import "github.com/grpo-dev/grpo/rubric"

// ParseLast applies p to the assistant turns from the last backwards and
// returns the first answer found, as verifiers' XMLParser.parse_answer
// does; a model that answered and then chatted on still has its answer.
func ParseLast(r rubric.Rollout, p func(text string) (string, bool)) (string, bool) {
	turns := r.AssistantTurns()
	for i := len(turns) - 1; i >= 0; i-- {
		if a, ok := p(turns[i]); ok {
			return a, true
		}
	}
	return "", false
}
