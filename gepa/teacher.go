package gepa

import (
	"context"
	"errors"
	"fmt"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/sampler"
)

// EngineTeacher is a Teacher answering through an Engine: an endpoint
// (rollout.RemoteEngine) or a model loaded here (rollout.LocalEngine).
// The reflection prompt is one user message; the reply is the model's
// first turn.
type EngineTeacher struct {
	Engine         rollout.Engine
	Sampling       sampler.Params
	EnableThinking *bool
}

// Reflect asks the teacher.
func (t EngineTeacher) Reflect(ctx context.Context, prompt string, seed uint64) (string, error) {
	ex := env.Example{ID: "reflection", Prompt: []chat.Message{{Role: "user", Content: prompt}}}
	trajs, err := t.Engine.Play(ctx, reflectionEnv{}, []env.Example{ex}, 1, t.Sampling, seed, rollout.Options{EnableThinking: t.EnableThinking})
	if err != nil {
		return "", err
	}
	if len(trajs) != 1 {
		return "", fmt.Errorf("%d replies to one reflection prompt", len(trajs))
	}
	tr := trajs[0]
	if len(tr.Errors) > 0 {
		return "", errors.New(tr.Errors[0])
	}
	for _, m := range tr.Messages {
		if m.Role == "assistant" {
			return m.Content, nil
		}
	}
	return "", errors.New("the teacher gave no reply")
}

// reflectionEnv is the one-turn "environment" a reflection is played in:
// the teacher's reply is not scored.
type reflectionEnv struct{}

func (reflectionEnv) ID() string                             { return "gepa-reflection" }
func (reflectionEnv) Examples(string) ([]env.Example, error) { return nil, nil }
func (reflectionEnv) NewEpisode(env.Example) env.Episode     { return oneTurn{} }
func (reflectionEnv) Rubric() *rubric.Rubric                 { return unscored }

type oneTurn struct{}

func (oneTurn) Respond(context.Context, string) ([]chat.Message, bool, error) { return nil, true, nil }

var unscored = func() *rubric.Rubric {
	r, err := rubric.Weighted(rubric.Term{Name: "unscored", Weight: 0, Func: rubric.Reward(func(rubric.Rollout) float64 { return 0 })})
	if err != nil {
		panic(err) // a constant rubric: cannot fail
	}
	return r
}()
