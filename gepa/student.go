package gepa

import "context"

// Split names the example set an evaluation draws from.
type Split string

const (
	// Train is the feedback set: minibatches for reflection come from it.
	Train Split = "train"
	// Val is the Pareto set: every accepted candidate is scored on all of it.
	Val Split = "val"
)

// Rollout is the student's play of one example under a prompt: what the
// teacher reads when it reflects, and the score the optimiser counts.
type Rollout struct {
	// Input is the task as the student saw it, without the system prompt.
	Input string `json:"input"`
	// Output is what the student answered (for a multi-turn episode the
	// whole exchange after the prompt).
	Output string `json:"output"`
	// Score is the rubric's reward.
	Score float64 `json:"score"`
	// Feedback is the rubric's account of the score: its named terms, the
	// reference answer, errors, and the state columns asked for.
	Feedback string `json:"feedback"`
}

// Student plays examples with a system prompt and scores them. Each
// returned Rollout is one metric call; Evaluate returns one per id, in
// order. Sizes are TrainSize and ValSize.
type Student interface {
	Evaluate(ctx context.Context, r Request) ([]Rollout, error)
	TrainSize() int
	ValSize() int
}

// Request is one evaluation: prompt as the system prompt on the examples
// ids of split, sampled under Seed (derived from the run's seed and the
// calls spent before it, so a resumed run samples what an uninterrupted
// one would).
type Request struct {
	Prompt string
	Split  Split
	IDs    []int
	Seed   uint64
}

// Teacher answers a reflection prompt; its reply holds the new instruction
// (see ParseInstruction). seed is derived as Request.Seed is.
type Teacher interface {
	Reflect(ctx context.Context, prompt string, seed uint64) (string, error)
}
