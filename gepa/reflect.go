package gepa

import (
	"fmt"
	"strings"
	"unicode"
)

// reflectionPrompt asks the teacher for a better instruction, showing it
// the current one and the student's traces on a minibatch: each input, the
// student's output and the rubric's feedback. (GEPA's default proposer
// prompt says the same; the wording is ours.)
func reflectionPrompt(current string, traces []Rollout) string {
	var b strings.Builder
	b.WriteString("An assistant was given the instruction below as its system prompt:\n```\n")
	b.WriteString(current)
	b.WriteString("\n```\n\nHere are tasks it was given, what it answered, and feedback on each answer (a score from 0 to 1 and how it was reached):\n")
	for i, t := range traces {
		fmt.Fprintf(&b, "\n## Example %d\n### Input\n%s\n### Assistant's output\n%s\n### Feedback\n%s\n", i+1, t.Input, t.Output, t.Feedback)
	}
	b.WriteString(`
Write a new instruction for the assistant. Work out from the inputs what the task is and the exact format its answers must take; from the outputs and the feedback, what it got wrong and why. Put into the instruction every specific fact and rule the feedback reveals (the assistant will not see these examples again) and any general strategy that worked.

Reply with the new instruction inside a ` + "```" + ` block.`)
	return b.String()
}

// mergePrompt asks the teacher to combine two candidates that each win on
// validation instances the other loses.
func mergePrompt(a, b string, onlyA, onlyB int) string {
	return fmt.Sprintf("Two instructions were used as an assistant's system prompt. The first scored better on %d validation tasks, the second on %d.\n\nFirst instruction:\n```\n%s\n```\n\nSecond instruction:\n```\n%s\n```\n\n"+
		"Write one instruction that keeps what makes each of them succeed: every rule and fact of both, without contradictions. Reply with the new instruction inside a ``` block.", onlyA, onlyB, a, b)
}

// ParseInstruction is the instruction in a teacher's reply, read as GEPA
// reads it: the text between the first ``` and the last ```, less a first
// line with no blank in it (the fence's language tag: ```text); a reply
// that opens with a fence it never closes is the text after that fence
// line, and one that ends with a fence it never opened the text before it;
// any other reply is the instruction as a whole. Trimmed either way.
func ParseInstruction(reply string) string {
	start := strings.Index(reply, "```")
	end := strings.LastIndex(reply, "```")
	if start < 0 || start == end {
		s := strings.TrimSpace(reply)
		if rest, ok := strings.CutPrefix(s, "```"); ok {
			return strings.TrimSpace(dropFenceTag(rest))
		}
		if rest, ok := strings.CutSuffix(s, "```"); ok {
			return strings.TrimSpace(rest)
		}
		return s
	}
	return strings.TrimSpace(dropFenceTag(reply[start+3 : end]))
}

// dropFenceTag removes a leading run of non-blank characters ending in a
// newline (the ``` line's language tag, or just its newline).
func dropFenceTag(s string) string {
	for i, r := range s {
		switch {
		case r == '\n':
			return s[i+1:]
		case unicode.IsSpace(r):
			return s
		}
	}
	return s
}
