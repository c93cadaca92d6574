package env

import (
	"fmt"
	"strings"
)

// hubNeeds are the Hub environments of Lab's current configs (verifiers
// a60a606's configs/{rl,eval,gepa}) that need what grpo cannot provide on
// this machine, each with what that is. An id naming one that is neither
// builtin nor installed fails with this line instead of "not found;
// install it": installing it would not make it run. docs/environments.md
// lists every Hub environment of those configs.
var hubNeeds = map[string]string{
	"dspy-flights": "a container sandbox, which grpo does not run: its verifiers v1 harness runs a DSPy program " +
		"(dspy_flights:run_dspy_flight_program) in a python:3.11-slim sandbox container that reaches the model through an interception endpoint",
	"opencode-harbor": "a container runtime (Docker) and the OpenCode CLI, which grpo does not drive: it runs OpenCode " +
		"on Harbor tasks inside each task's Docker image and scores them with the task's tests/test.sh there",
}

// needsError is the one-line error for an id of hubNeeds ("owner/name"
// with owner primeintellect or prime, or the bare name; "@version"
// ignored); nil for any other id.
func needsError(id string) error {
	name, _, _ := strings.Cut(FoldID(id), "@")
	if owner, rest, ok := strings.Cut(name, "/"); ok {
		if owner != "primeintellect" && owner != "prime" {
			return nil
		}
		name = rest
	}
	need, ok := hubNeeds[name]
	if !ok {
		return nil
	}
	return fmt.Errorf("env %s cannot run on this machine: it needs %s (see grpo's docs/environments.md)", id, need)
}
