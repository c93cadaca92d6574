package rollout

import (
	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/loss"
)

// Trajectory is one played and scored episode, kept as the exact tokens
// the model saw: PromptTokens, then Tokens — the model's turns as sampled
// and, between them, the environment's replies as the chat template
// renders them. It maps field for field onto loss.Sample (Prompt,
// Completion, ModelMask, OldLogp, Truncated).
type Trajectory struct {
	env.Example
	PromptTokens []int32
	// Tokens is everything after the prompt.
	Tokens []int32
	// ModelMask[i] is true where Tokens[i] was sampled by the model and
	// false where the environment's reply put it.
	ModelMask []bool
	// Logprobs[i] is the sampler's log-prob of Tokens[i] under the model's
	// raw distribution (see package sampler); 0 on environment tokens.
	Logprobs []float32
	// Experts, with Options.RecordExperts on a mixture-of-experts model,
	// is the routing of every token the model read (the prompt, then
	// Tokens but the last unless a later forward read it), in
	// model.Batch.Experts' layout: what loss.Sample.Experts replays.
	Experts []int32
	// Messages is the completion as chat messages, for the rubric: each
	// assistant turn's decoded text (without its stop token) and the
	// environment's replies, in order.
	Messages []chat.Message
	// Rewritten, for an agent episode whose program rewrote its
	// conversation's history, holds its other samples (agentSamples), in
	// the order they started; PromptTokens … Logprobs are the sample of
	// its last model call. Each trains with the trajectory's reward.
	Rewritten []TokenSample
	// AgentCalls, for an agent episode, records each model call the
	// program made through the interception endpoint.
	AgentCalls []AgentCall
	// Policy is the policy step whose adapter generated the episode (the
	// optimiser steps behind it; 0: the initial adapter). A Producer's
	// rollouts may be older than the trainer's policy. ServerEngine sets
	// it; in process it is 0, the caller knowing the policy it plays.
	Policy int
	// Turns counts the model's turns.
	Turns int
	// Truncated is true when a length limit ended the episode: the last
	// turn hit max_tokens or the cache length, or the environment's reply
	// did not fit. A turn cut by max_tokens that the episode goes on from
	// (max_tokens is per turn) does not truncate it.
	Truncated bool
	// TruncatedBy says which limit: TruncatedMaxTokens or TruncatedContext
	// ("" when not truncated), so a run can count episodes that outgrew
	// their slot apart from turns that merely ran long.
	TruncatedBy string
	// FinishReason is the last turn's: "stop" or "length".
	FinishReason string
	// Reward is the rubric's reward in [0, 1]; 0 for an episode that failed.
	Reward float64
	// Metrics are the rubric's metrics, plus "errors/episode" = 1 for an
	// episode that failed.
	Metrics map[string]float64
	// ToolCalls counts the episode's tool calls, readable or not, and
	// ToolErrors those answered with an error (see package env's Tool).
	ToolCalls, ToolErrors int
	// ToolMetrics, for a tool environment, holds tool_calls, tool_errors
	// and tool_calls/<name> per declared tool (nil otherwise): what the
	// trainer's step metrics and eval rows report beside the rubric's.
	ToolMetrics map[string]float64
	toolCallsBy map[string]int
	// queued: the episode ended and went to the scorer.
	queued bool
	// FailedGenerating is true when the episode ended because a model
	// turn could not be generated — the sampler's or the inference
	// server's failure, not the environment's — so a run whose every
	// rollout failed can name the server instead of the environment.
	FailedGenerating bool
	// Errors holds one line per problem: the episode's (then the episode
	// ended and scored 0) and the rubric's failed terms.
	Errors []string
}

// fail ends the trajectory with an error: reward 0.
func (t *Trajectory) fail(msg string) {
	t.Errors = append(t.Errors, msg)
}

// Reasons for Trajectory.TruncatedBy.
const (
	// TruncatedMaxTokens: the last turn hit max_tokens and the episode
	// ended there.
	TruncatedMaxTokens = "max_tokens"
	// TruncatedContext: the conversation outgrew its KV cache slot (sized
	// by CacheLen, at most the model's context): a turn ran into the end
	// of the slot, or the environment's reply did not fit in it.
	TruncatedContext = "context"
)

// OtherSamples is the trajectory's samples besides its own tokens (an
// agent episode's Rewritten), as the policy update takes them: each
// trains with the trajectory's advantage (update.Scored.Others).
func (t *Trajectory) OtherSamples() []loss.Sample {
	var out []loss.Sample
	for _, s := range t.Rewritten {
		out = append(out, loss.Sample{Prompt: s.PromptTokens, Completion: s.Tokens, ModelMask: s.ModelMask, OldLogp: s.Logprobs})
	}
	return out
}
