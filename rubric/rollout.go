package rubric

import "github.com/grpo-dev/grpo/chat"

// Rollout is what a reward function sees: the prompt, what the model (and, in
// multi-turn environments, the environment) said after it, and the
// example's reference answer and extra fields. It is plain text; tokens
// never reach a rubric.
type Rollout struct {
	Prompt []chat.Message `json:"prompt"`
	// Completion holds the assistant turns and, between them, the
	// environment's replies, in order.
	Completion []chat.Message `json:"completion"`
	// Answer is the dataset's reference answer ("" when there is none).
	Answer string `json:"answer"`
	// Info carries extra per-example fields from the dataset; it is
	// sent to external rubrics as JSON, so values must be JSON-encodable.
	Info map[string]any `json:"info"`
}

// SingleTurn builds the Rollout of a one-question, one-answer exchange.
func SingleTurn(prompt, completion, answer string) Rollout {
	return Rollout{
		Prompt:     []chat.Message{{Role: "user", Content: prompt}},
		Completion: []chat.Message{{Role: "assistant", Content: completion}},
		Answer:     answer,
	}
}

// AssistantTurns returns the contents of the assistant messages of the
// completion, in order.
func (r Rollout) AssistantTurns() []string {
	var turns []string
	for _, m := range r.Completion {
		if m.Role == "assistant" {
			turns = append(turns, m.Content)
		}
	}
	return turns
}

// LastAssistant returns the content of the last assistant message of the
// completion, or "" when there is none.
func (r Rollout) LastAssistant() string {
	for i := len(r.Completion) - 1; i >= 0; i-- {
		if r.Completion[i].Role == "assistant" {
			return r.Completion[i].Content
		}
	}
	return ""
}

// Question returns the content of the last user message of the prompt, or ""
// when there is none.
func (r Rollout) Question() string {
	for i := len(r.Prompt) - 1; i >= 0; i-- {
		if r.Prompt[i].Role == "user" {
			return r.Prompt[i].Content
		}
	}
	return ""
}
