package wordle

import (
	"context"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
)

// v1 (the default): the taskset's prompt, game i seeded i (the secrets
// verifiers draws from the builtin list, see the v1 golden file), the
// game's replies and its reward.
func TestWordleV1Game(t *testing.T) {
	e := envtest.NewEnv(t, "wordle", map[string]any{"num_train_examples": 3, "num_eval_examples": 2})
	train, _ := e.Examples("train")
	eval, _ := e.Examples("eval")
	if len(train) != 3 || len(eval) != 2 || train[0].Answer != "union" || train[1].Answer != "cabin" || eval[1].Answer != "cabin" {
		t.Fatalf("stream: %+v / %+v", train, eval)
	}
	if train[0].Prompt[0].Content != wordleSystemPromptV1 || train[2].Info["seed"] != 2 {
		t.Errorf("prompt %+v info %v", train[0].Prompt, train[2].Info)
	}
	if off, _ := envtest.NewEnv(t, "wordle", map[string]any{"seed": 1, "num_train_examples": 1}).Examples("train"); off[0].Answer != "cabin" {
		t.Errorf("seed 1 starts at game 1: %+v", off)
	}
	ep := e.NewEpisode(env.Example{Answer: "crane"})
	ctx := context.Background()
	reply, done, _ := ep.Respond(ctx, "  plant\n")
	if done || reply[0].Content != "P L A N T\nX X G G X\nYou have 5 guesses left." {
		t.Fatalf("bare word: %+v %v", reply, done)
	}
	reply, done, _ = ep.Respond(ctx, "maybe [qwxyz] or [crane]")
	if done || !strings.HasPrefix(reply[0].Content, "You attempted an invalid move. Reason: 'qwxyz' is not an English word.") {
		t.Fatalf("first bracket: %+v %v", reply, done)
	}
	if reply, done, _ = ep.Respond(ctx, "[crane]"); !done || reply != nil {
		t.Fatalf("a win ends the game with no reply: %+v %v", reply, done)
	}
	if _, err := env.New("wordle", map[string]any{"seed": -1}); err == nil || !strings.Contains(err.Error(), "seed >= 0") {
		t.Errorf("negative seed: %v", err)
	}
}
