package gepa

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/eval"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
)

// EnvStudent is a Student that plays an environment's examples on an
// Engine (rollout.LocalEngine: a model loaded here, with its adapter if
// any; rollout.RemoteEngine: an endpoint) and scores each with the
// environment's rubric, as grpo eval does. The train set is the start of
// the environment's "train" split, the validation set the start of its
// "eval" split.
type EnvStudent struct {
	Engine   rollout.Engine
	Env      env.Environment
	Train    []env.Example
	Val      []env.Example
	Sampling sampler.Params
	// EnableThinking is the chat template's enable_thinking (nil: unset).
	EnableThinking *bool
	// ReasoningEffort is the chat template's reasoning_effort ("": unset).
	ReasoningEffort string
	// MaxConcurrent bounds the episodes played at once (a local model's
	// batch; an endpoint's requests in flight).
	MaxConcurrent int
	// StateColumns name what of each rollout besides the rubric's terms
	// the teacher is shown: "turns", "tool_calls", "truncated",
	// "finish_reason", a metric's name, or a field of the example's info.
	StateColumns []string
}

// NewEnvStudent takes the first numTrain train and numVal eval examples
// of e. notes say where a split held fewer than asked (the run goes on
// with what there is).
func NewEnvStudent(eng rollout.Engine, e env.Environment, numTrain, numVal int) (s *EnvStudent, notes []string, err error) {
	s = &EnvStudent{Engine: eng, Env: e, Sampling: sampler.DefaultParams(), MaxConcurrent: 32}
	for _, sp := range []struct {
		split, key string
		n          int
		dst        *[]env.Example
	}{{"train", "num_train", numTrain, &s.Train}, {"eval", "num_val", numVal, &s.Val}} {
		exs, err := e.Examples(sp.split)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", e.ID(), err)
		}
		if len(exs) < sp.n {
			notes = append(notes, fmt.Sprintf("env %s: the %s split has %d examples, fewer than %s = %d; using %d", e.ID(), sp.split, len(exs), sp.key, sp.n, len(exs)))
		}
		*sp.dst = exs[:min(sp.n, len(exs))]
	}
	return s, notes, nil
}

// SeedPrompt is the system prompt the environment itself gives (its
// system_prompt argument): the seed candidate.
func (s *EnvStudent) SeedPrompt() string {
	for _, set := range [][]env.Example{s.Train, s.Val} {
		if len(set) > 0 {
			return SystemPromptOf(set[0].Prompt)
		}
	}
	return ""
}

func (s *EnvStudent) TrainSize() int { return len(s.Train) }
func (s *EnvStudent) ValSize() int   { return len(s.Val) }

// Evaluate plays the examples with r.Prompt as their system message, at
// most MaxConcurrent at once.
func (s *EnvStudent) Evaluate(ctx context.Context, r Request) ([]Rollout, error) {
	set := s.Train
	if r.Split == Val {
		set = s.Val
	}
	exs := make([]env.Example, len(r.IDs))
	for i, id := range r.IDs {
		if id < 0 || id >= len(set) {
			return nil, fmt.Errorf("%s example %d: the set has %d", r.Split, id, len(set))
		}
		exs[i] = set[id]
		exs[i].Prompt = WithSystemPrompt(set[id].Prompt, r.Prompt)
	}
	out := make([]Rollout, 0, len(exs))
	if len(exs) == 0 {
		return out, nil
	}
	// Played as grpo eval plays them: one rollout each, in passes of
	// MaxConcurrent (the first seeded by r.Seed, the pass at example i by
	// DeriveSeed(r.Seed, i)).
	res, err := eval.Run(ctx, s.Engine, s.Env, s.Env.ID(), eval.Options{Examples: exs, NumExamples: -1, RolloutsPerExample: 1,
		Sampling: s.Sampling, EnableThinking: s.EnableThinking, ReasoningEffort: s.ReasoningEffort, Seed: r.Seed, Batch: max(s.MaxConcurrent, 1)})
	if err != nil {
		return nil, err
	}
	for i := range res.Trajectories {
		out = append(out, s.rolloutOf(&res.Trajectories[i]))
	}
	return out, nil
}

func (s *EnvStudent) rolloutOf(t *rollout.Trajectory) Rollout {
	var in []chat.Message
	for _, m := range t.Prompt {
		if m.Role != "system" {
			in = append(in, m)
		}
	}
	return Rollout{Input: renderMessages(in), Output: renderMessages(t.Messages), Score: t.Reward, Feedback: s.feedback(t)}
}

// feedback is the rubric's account of a rollout: the reward, each named
// term, the reference answer, what went wrong, and the state columns.
func (s *EnvStudent) feedback(t *rollout.Trajectory) string {
	var b strings.Builder
	fmt.Fprintf(&b, "reward %.2f", t.Reward)
	names := make([]string, 0, len(t.Metrics))
	for k := range t.Metrics {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) > 0 {
		b.WriteString(" (")
		for i, k := range names {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %.3g", k, t.Metrics[k])
		}
		b.WriteString(")")
	}
	if t.Answer != "" {
		fmt.Fprintf(&b, "\nexpected answer: %s", t.Answer)
	}
	if t.Truncated {
		fmt.Fprintf(&b, "\nthe answer was cut off (%s limit)", t.TruncatedBy)
	}
	for _, e := range t.Errors {
		fmt.Fprintf(&b, "\nerror: %s", e)
	}
	for _, c := range s.StateColumns {
		if v, ok := stateColumn(t, c); ok {
			fmt.Fprintf(&b, "\n%s: %v", c, v)
		}
	}
	return b.String()
}

// stateColumn is one of a rollout's recorded fields by its verifiers name.
func stateColumn(t *rollout.Trajectory, name string) (any, bool) {
	switch name {
	case "turn", "turns":
		return t.Turns, true
	case "tool_calls":
		return t.ToolCalls, true
	case "truncated":
		return t.Truncated, true
	case "finish_reason":
		return t.FinishReason, true
	case "answer":
		return t.Answer, true
	}
	if v, ok := t.Metrics[name]; ok {
		return v, true
	}
	if v, ok := t.Info[name]; ok {
		return v, true
	}
	return nil, false
}

func renderMessages(ms []chat.Message) string {
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteString("\n")
		}
		if len(ms) > 1 || m.Role != "user" && m.Role != "assistant" {
			fmt.Fprintf(&b, "[%s] ", m.Role)
		}
		b.WriteString(m.Content)
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, "\n[tool call] %s(%s)", tc.Function.Name, tc.Function.Arguments)
		}
	}
	return b.String()
}

// SystemPromptOf is the content of a prompt's system message ("" when it
// has none).
func SystemPromptOf(prompt []chat.Message) string {
	for _, m := range prompt {
		if m.Role == "system" {
			return m.Content
		}
	}
	return ""
}

// WithSystemPrompt is prompt with its system message's content replaced
// by system (one put first when it had none; removed when system is ""):
// what the environments' system_prompt argument does to each example, so
// a candidate is tried without rebuilding the environment.
func WithSystemPrompt(prompt []chat.Message, system string) []chat.Message {
	out := make([]chat.Message, 0, len(prompt)+1)
	found := false
	for _, m := range prompt {
		if m.Role == "system" && !found {
			found = true
			if system == "" {
				continue
			}
			m.Content = system
		}
		out = append(out, m)
	}
	if !found && system != "" {
		out = append([]chat.Message{{Role: "system", Content: system}}, out...)
	}
	return out
}
