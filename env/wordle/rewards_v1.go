package wordle

import (
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/rubric"
)

// rubricV1 is v1's one reward, game_reward, as verifiers weighs it (1):
// it lies in [0, 1] already, so v1's Version has RewardScale 1.
func rubricV1(maxGuesses int) *rubric.Rubric {
	return lab.MustRubric(rubric.Term{Name: "game_reward", Weight: 1, Func: rubric.Reward(func(r rubric.Rollout) float64 {
		return gameRewardV1(r, maxGuesses)
	})})
}
