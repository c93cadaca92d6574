package env

import (
	"context"

	"github.com/grpo-dev/grpo/chat"
)

// singleTurnEpisode is the harness of one question and one answer: the
// first assistant turn ends the episode.
type singleTurnEpisode struct{}

func (singleTurnEpisode) Respond(context.Context, string) ([]chat.Message, bool, error) {
	return nil, true, nil
}

// chatPrompt is the prompt verifiers builds for a question: the system
// prompt (when there is one), then the question as the user's message.
func chatPrompt(system, question string) []chat.Message {
	var p []chat.Message
	if system != "" {
		p = append(p, chat.Message{Role: "system", Content: system})
	}
	return append(p, chat.Message{Role: "user", Content: question})
}

// limit keeps the first n examples; n < 0 keeps them all, as verifiers'
// num_train_examples = -1 does.
func limit(exs []Example, n int) []Example {
	if n >= 0 && n < len(exs) {
		return exs[:n]
	}
	return exs
}

// splitError is what Examples returns for a split name it does not know.
func splitError(id, split string) error {
	return &SplitError{ID: id, Split: split}
}

// SplitError reports a split other than "train" or "eval".
type SplitError struct{ ID, Split string }

func (e *SplitError) Error() string {
	return "env " + e.ID + `: unknown split "` + e.Split + `"; use "train" or "eval"`
}
