package wordle

import (
	"regexp"
	"strings"

	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/rubric"
)

// The four reward functions of Prime's wordle environment (verifiers
// 8d4b33247, environments/wordle), unweighted, computed as there from the
// completion's messages: v0's rubric.

// rubricV0 weighs them as Lab does (1, 1, 1, 0.2), scaled into [0, 1].
func rubricV0() (*rubric.Rubric, error) {
	format, err := rubric.XMLFormatReward("guess")
	if err != nil {
		return nil, err
	}
	return lab.MustRubric(
		rubric.Term{Name: "correct_answer", Weight: wordleScale, Func: rubric.Reward(wordleCorrect)},
		rubric.Term{Name: "partial_answer", Weight: wordleScale, Func: rubric.Reward(wordlePartial)},
		rubric.Term{Name: "length_bonus", Weight: wordleScale, Func: rubric.Reward(wordleLengthBonus)},
		rubric.Term{Name: "format_reward", Weight: 0.2 * wordleScale, Func: format},
	), nil
}

// wordleCorrect is correct_answer: the guess parse_answer reads from the
// completion is exactly "[secret]".
func wordleCorrect(r rubric.Rollout) float64 {
	if g, ok := latestGuess(r.AssistantTurns()); ok && g == "["+r.Answer+"]" {
		return 1
	}
	return 0
}

// wordlePartial is partial_answer: when not solved, 0.2 per G and 0.1 per
// Y of the latest environment message that has exactly three lines (the
// word, its marks, the guesses left).
func wordlePartial(r rubric.Rollout) float64 {
	if wordleCorrect(r) == 1 {
		return 0
	}
	for i := len(r.Completion) - 1; i >= 0; i-- {
		m := r.Completion[i]
		if m.Role != "user" {
			continue
		}
		lines := strings.Split(rubric.PyStrip(m.Content), "\n")
		if len(lines) == 3 {
			marks := rubric.PyStrip(lines[1])
			return 0.2*float64(strings.Count(marks, "G")) + 0.1*float64(strings.Count(marks, "Y"))
		}
	}
	return 0
}

// guessLine is length_bonus's r"<guess>.*</guess>": without DOTALL, so a
// guess tag split over lines does not count as a guess there.
var guessLine = regexp.MustCompile(`<guess>.*</guess>`)

// wordleLengthBonus is length_bonus: correct / the number of turns with a
// one-line guess tag (1 when there are none).
func wordleLengthBonus(r rubric.Rollout) float64 {
	n := 0
	for _, t := range r.AssistantTurns() {
		if guessLine.MatchString(t) {
			n++
		}
	}
	return wordleCorrect(r) / float64(max(n, 1))
}
