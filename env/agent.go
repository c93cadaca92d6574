package env

import "time"

// AgentProgram is implemented by environments whose episodes are played
// by an external agent program — a CLI agent, a DSPy program, a bash
// loop — that calls the policy as its OpenAI-compatible model. Package
// rollout runs the program once per rollout, points it at a local
// interception endpoint, and turns its model calls into training
// samples; the rubric scores the conversation and the program's output.
// NewEpisode is not called for such an environment.
type AgentProgram interface {
	Agent() AgentSpec
}

// AgentSpec says how to run an environment's agent program.
type AgentSpec struct {
	// Command is the program and its arguments (argv, no shell).
	Command []string
	// Dir is its working directory ("" for the caller's).
	Dir string
	// Env holds extra KEY=VALUE variables on top of the caller's.
	Env []string
	// Timeout bounds the program's time to its first call and, apart, its
	// episode from the moment a cache slot takes it to its exit (the wait
	// for a slot does not count); past it the program's process group is
	// killed and the episode fails.
	Timeout time.Duration
	// PromptTokens is the room a KV cache slot keeps for the program's
	// first request, which is not known before the program runs.
	PromptTokens int
}
