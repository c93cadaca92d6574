package rollout

import (
	"context"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// Engine plays and scores episodes: in this process (LocalEngine, a
// sampler over the model) or on an OpenAI-compatible server
// (RemoteEngine). Trajectories come back in Play's order: example i's
// rollout j at i*perExample+j.
type Engine interface {
	Play(ctx context.Context, e env.Environment, exs []env.Example, perExample int, p sampler.Params, seed uint64, opts Options) ([]Trajectory, error)
}

// LocalEngine is Local over a model and its tokenizer.
type LocalEngine struct {
	Model *model.Model
	Tok   *tokenizer.Tokenizer
}

// Play is Local.
func (l LocalEngine) Play(ctx context.Context, e env.Environment, exs []env.Example, perExample int, p sampler.Params, seed uint64, opts Options) ([]Trajectory, error) {
	return Local(ctx, l.Model, l.Tok, e, exs, perExample, p, seed, opts)
}
