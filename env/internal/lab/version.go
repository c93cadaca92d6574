package lab

import (
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
)

// The Lab's builtins were rewritten as verifiers v1 tasksets (verifiers
// a60a606): gsm8k asks for "#### N" and no longer reads \boxed{},
// reverse-text and alphabet-sort score as before under new metric names
// and task streams. V1 is their default; V0 keeps the behaviour they had
// at verifiers 8d4b33247, so that runs started before reproduce.
const (
	V1 = "v1"
	V0 = "v0"
)

// Versions is the Spec.Versions of such a builtin; v0Hub is the Hub
// version its 8d4b33247 pyproject published (v1's pyprojects restarted at
// 0.1.0, a number older releases had too, so it names neither).
func Versions(v0Hub string) []env.Version {
	return []env.Version{
		{Name: V1, About: "verifiers a60a606 taskset"},
		{Name: V0, Hub: []string{v0Hub}, About: "verifiers 8d4b33247"},
	}
}

// IsV0 reports whether o selects the 8d4b33247 behaviour.
func IsV0(o env.Options) bool { return o.Version == V0 }

// LastReply is verifiers v1's Trace.last_reply: the content of the last
// assistant message, stripped ("" when there is none). v1 rewards read it
// rather than the latest turn that has an answer, as v0's parsers did.
func LastReply(r rubric.Rollout) string { return rubric.PyStrip(r.LastAssistant()) }
