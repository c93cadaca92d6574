// Package env owns environments: an Environment is a dataset, a harness
// (how an episode unfolds: one answer, or several turns in which the
// environment replies) and a rubric (how a finished rollout is scored).
// It also owns the registry (with finders for environments registered
// elsewhere), argument validation, dataset loaders and tools. Each builtin
// lives in a subpackage that registers itself (env/builtins links them
// all); environment.toml directories are env/custom's, Python environments
// env/pyenv's. Playing episodes with a model is package rollout's job: env
// knows nothing about sampling, tokens or GRPO.
package env

import (
	"context"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/rubric"
)

// Example is one dataset row: the prompt messages (system and user), the
// reference answer ("" when none) and any extra fields the rubric needs.
type Example struct {
	ID     string
	Prompt []chat.Message
	Answer string
	Info   map[string]any
}

// Environment is a dataset, a harness and a rubric.
type Environment interface {
	// ID is the registry id ("reverse-text", "gsm8k", "my-org/my-env").
	ID() string
	// Examples returns a split ("train" or "eval") in a deterministic order;
	// synthetic environments generate it from their seed.
	Examples(split string) ([]Example, error)
	// NewEpisode starts playing ex. Single-turn environments return an
	// episode whose first Respond ends it.
	NewEpisode(ex Example) Episode
	// Rubric scores finished rollouts.
	Rubric() *rubric.Rubric
}

// Episode is one play of an example.
type Episode interface {
	// Respond receives the assistant's latest turn (the decoded text of what
	// the model generated, without the stop token) and returns the
	// environment's reply messages (usually one user message), or done
	// when the episode is over. It is called once per assistant turn.
	Respond(ctx context.Context, assistant string) (reply []chat.Message, done bool, err error)
}

// TurnLimiter is implemented by multi-turn environments that know the most
// model turns an episode can take; callers size KV caches with it.
// Environments without it are treated as single-turn for sizing (a longer
// episode is cut off as truncated when its cache slot fills).
type TurnLimiter interface {
	MaxTurns() int
}

// ReplySizer is implemented by multi-turn environments whose replies can
// be longer than rollout's default reply budget (tool results: a page
// section, a program's output): ReplyTokens is the room a KV cache slot
// keeps for the reply after each model turn, all of that turn's messages
// as the chat template writes them with the next assistant header.
type ReplySizer interface {
	ReplyTokens() int
}
