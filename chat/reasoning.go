package chat

import "fmt"

// ReasoningEffortIgnored says why reasoning_effort (Lab's [sampling] key,
// OpenAI's request field, read only by GPT-OSS chat templates) changes
// nothing here. train, eval, GEPA and serve all accept the key, check its
// value with CheckReasoningEffort and ignore it, in these same words, so
// one config or request means the same thing on every surface.
const ReasoningEffortIgnored = "it only applies to GPT-OSS chat templates, and grpo does not run GPT-OSS models yet"

// CheckReasoningEffort accepts "" (unset) and OpenAI's values.
func CheckReasoningEffort(v string) error {
	switch v {
	case "", "low", "medium", "high":
		return nil
	}
	return fmt.Errorf(`reasoning_effort = %q: want "low", "medium" or "high"`, v)
}
