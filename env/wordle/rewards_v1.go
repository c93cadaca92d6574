package wordle

import (
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/rubric"
)

// rubricV1 is v1's one reward, game_reward (weight 1 in verifiers: the
// reward is the game's). Its weight here is wordleScale because Spec's
// RewardScale, which `grpo env score` divides by to report verifiers'
// reward, is one number for both versions: grpo's v1 reward is
// game_reward / 2.2 and its verifiers reward (and the metric) exactly
// game_reward.
func rubricV1(maxGuesses int) *rubric.Rubric {
	return lab.MustRubric(rubric.Term{Name: "game_reward", Weight: wordleScale, Func: rubric.Reward(func(r rubric.Rollout) float64 {
		return gameRewardV1(r, maxGuesses)
	})})
}
