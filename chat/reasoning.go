package chat

import "fmt"

// ReasoningEffortVar is the chat-template variable that reasoning_effort
// (Lab's [sampling] key, OpenAI's request field) sets: gpt-oss's harmony
// template writes it into its system message ("Reasoning: low"). train,
// eval, GEPA and serve all pass it to the template as it is.
const ReasoningEffortVar = "reasoning_effort"

// CheckReasoningEffort accepts "" (unset) and OpenAI's values.
func CheckReasoningEffort(v string) error {
	switch v {
	case "", "low", "medium", "high":
		return nil
	}
	return fmt.Errorf(`reasoning_effort = %q: want "low", "medium" or "high"`, v)
}

// ReasoningEffortUnread is the one-line warning for a reasoning_effort set
// under key for a model whose chat template never reads the variable, so
// that the setting changes nothing.
func ReasoningEffortUnread(key, value string) string {
	return fmt.Sprintf("%s = %q changes nothing: this model's chat template does not read reasoning_effort (gpt-oss's harmony template does)", key, value)
}
