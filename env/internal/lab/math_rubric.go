package lab

import "github.com/grpo-dev/grpo/rubric"

// MathRubric is verifiers' MathRubric() at 8d4b33247, which Prime's
// gsm8k and math_python environments score with: one reward function,
// correct_answer (weight 1), reading the last \boxed{} after the last
// </think> of the last assistant turn (strict: no box, no answer; "####"
// and \fbox are not read) and comparing it to the reference with
// math-verify (rubric.MathVerify).
var MathRubric = MustRubric(rubric.Term{Name: "correct_answer", Weight: 1, Func: rubric.Reward(func(r rubric.Rollout) float64 {
	got, ok := rubric.MaybeThinkAnswer(r)
	if ok && rubric.MathVerify(r.Answer, got) {
		return 1
	}
	return 0
})})

// BoxedSystemPrompt is the system prompt of verifiers' boxed-answer math
// environments (gsm8k, math).
const BoxedSystemPrompt = `Please reason step by step, and put your final answer within \boxed{}.`
