package rubric_test

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/rubric"
)

// The reverse-text environment's reward: the difflib ratio between the text
// in <reversed_text> tags and the reversed prompt, plus a format term.
func ExampleWeighted() {
	lcs := rubric.Reward(func(r rubric.Rollout) float64 {
		got, _ := rubric.XMLTag(rubric.StripThink(r.LastAssistant()), "reversed_text")
		return rubric.Ratio(got, r.Answer)
	})
	format, _ := rubric.FormatReward("reversed_text")
	rb, err := rubric.Weighted(
		rubric.Term{Name: "lcs", Weight: 0.8, Func: lcs},
		rubric.Term{Name: "format", Weight: 0.2, Func: format},
	)
	if err != nil {
		panic(err)
	}
	r := rubric.SingleTurn("Reverse: hello world",
		"<think>reverse it</think><reversed_text>dlrow olleh</reversed_text>", "dlrow olleh")
	res := rb.Score(context.Background(), r)
	fmt.Printf("reward %.2f lcs %.2f format %.2f\n", res.Reward, res.Metrics["lcs"], res.Metrics["format"])
	// Output: reward 1.00 lcs 1.00 format 1.00
}

func ExampleMathEquivalent() {
	got, _ := rubric.BoxedAnswer(`so the answer is $\boxed{\dfrac{3}{4}}$.`)
	fmt.Println(rubric.MathEquivalent(got, "0.75"), rubric.MathEquivalent(got, `\frac{4}{3}`))
	// Output: true false
}

func ExampleNumericMatch() {
	got, _ := rubric.HashAnswer("She earns 12 * 60 = 720 dollars.\n#### $720.00")
	fmt.Println(rubric.NumericMatch(got, "720"))
	// Output: true
}
