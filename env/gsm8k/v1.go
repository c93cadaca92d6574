package gsm8k

import (
	"regexp"
	"strings"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/rubric"
)

// v1 is verifiers a60a606's gsm8k taskset (environments/gsm8k): no
// system message, the instruction before the question in the user
// message, the answer after GSM8K's last "####", and one reward,
// correct, which verify.py computes: the last "####\s*(.+)" of the last
// reply (the whole reply when there is none), boxed, math-verified
// against the boxed answer. A \boxed{} answer without "####" still counts
// (the reply is boxed whole and math-verify reads the inner box), but a
// "####" after it wins; a <think> block gets no special treatment.

// v1Instruction is the taskset's SYSTEM, which it sends as the start of
// the user message.
const v1Instruction = "Solve the grade-school math problem. Reason step by step, then give the final " +
	"answer as a single number on the last line, prefixed with '#### ' (e.g. '#### 42')."

// v1Examples builds v1's examples; system is the system_prompt arg, sent
// only when a config set it to something other than v0's default.
func v1Examples(rows []env.Row, system string) ([]env.Example, error) {
	if system == lab.BoxedSystemPrompt {
		system = ""
	}
	exs, err := env.QAExamples(rows, env.QAFields{Question: "question", Answer: "answer"}, system, v1Answer)
	for i := range exs {
		last := &exs[i].Prompt[len(exs[i].Prompt)-1]
		last.Content = v1Instruction + "\n\n" + last.Content
	}
	return exs, err
}

// v1Answer is the taskset's row["answer"].split("####")[-1].strip().
func v1Answer(s string) string {
	parts := strings.Split(s, "####")
	return rubric.PyStrip(parts[len(parts)-1])
}

// hashLine is verify.py's r"####\s*(.+)"; Python's \s is Unicode white
// space, Go's ASCII only, hence the class.
var hashLine = regexp.MustCompile(`####[\t\n\v\f\r \x{1c}-\x{1f}\x{85}\p{Z}]*(.+)`)

var correctRubric = lab.MustRubric(rubric.Term{Name: "correct", Weight: 1, Func: rubric.Reward(func(r rubric.Rollout) float64 {
	pred := lab.LastReply(r)
	if m := hashLine.FindAllStringSubmatch(pred, -1); len(m) > 0 {
		pred = rubric.PyStrip(m[len(m)-1][1])
	}
	if rubric.MathVerify(r.Answer, pred) {
		return 1
	}
	return 0
})})
