package env

import (
	"context"
	"errors"

	"github.com/grpo-dev/grpo/chat"
)

// SingleTurnEpisode is the harness of one question and one answer: the
// first assistant turn ends the episode.
type SingleTurnEpisode struct{}

func (SingleTurnEpisode) Respond(context.Context, string) ([]chat.Message, bool, error) {
	return nil, true, nil
}

// ChatPrompt is the prompt verifiers builds for a question: the system
// prompt (when there is one), then the question as the user's message.
func ChatPrompt(system, question string) []chat.Message {
	var p []chat.Message
	if system != "" {
		p = append(p, chat.Message{Role: "system", Content: system})
	}
	return append(p, chat.Message{Role: "user", Content: question})
}

// Limit keeps the first n examples; n < 0 keeps them all, as verifiers'
// num_train_examples = -1 does.
func Limit(exs []Example, n int) []Example {
	if n >= 0 && n < len(exs) {
		return exs[:n]
	}
	return exs
}

// SplitErr is what Examples returns for a split name it does not know.
func SplitErr(id, split string) error {
	return &SplitError{ID: id, Split: split}
}

// ErrNoSplit is returned (wrapped) by Examples for a split an environment
// does not have, e.g. "eval" of a custom environment with no eval file.
var ErrNoSplit = errors.New("no such split")

// SplitError reports a split other than "train" or "eval".
type SplitError struct{ ID, Split string }

func (e *SplitError) Error() string {
	return "env " + e.ID + `: unknown split "` + e.Split + `"; use "train" or "eval"`
}
