package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/tokenizer"
)

// toolBox is a tool environment's tools as one Play call uses them: their
// schemas for the chat template, read once, and the format the model's
// calls are parsed in (its chat template's).
type toolBox struct {
	format  tokenizer.ToolCallFormat
	schemas []json.RawMessage
	specs   map[string]env.ToolSpec
	tools   map[string]env.Tool
	names   []string // sorted
}

// newToolBox reads e's tools; nil for an environment without tools. A
// tool environment needs a chat template that shows the model its tools
// and a call format grpo can read back.
func newToolBox(tok *tokenizer.Tokenizer, e env.Environment) (*toolBox, error) {
	tools := env.ToolsOf(e)
	if len(tools) == 0 {
		return nil, nil
	}
	b := &toolBox{format: tok.ToolCallFormat(), specs: map[string]env.ToolSpec{}, tools: map[string]env.Tool{}}
	if b.format == tokenizer.ToolCallsNone {
		return nil, fmt.Errorf("rollouts: environment %q calls tools, but this model's chat template renders no tool calls grpo can read (Hermes <tool_call> as Qwen2.5/Qwen3, Qwen3.5's XML <function=…> calls, or Llama 3.1's JSON); use a model whose template has tools", e.ID())
	}
	for _, t := range tools {
		spec, err := env.ParseToolSchema(t.Schema())
		if err != nil {
			return nil, fmt.Errorf("rollouts: environment %q: %v", e.ID(), err)
		}
		if spec.Name != t.Name() {
			return nil, fmt.Errorf("rollouts: environment %q: tool %q has a schema named %q", e.ID(), t.Name(), spec.Name)
		}
		if _, dup := b.specs[spec.Name]; dup {
			return nil, fmt.Errorf("rollouts: environment %q declares tool %q twice", e.ID(), spec.Name)
		}
		b.specs[spec.Name], b.tools[spec.Name] = spec, t
		b.schemas = append(b.schemas, t.Schema())
		b.names = append(b.names, spec.Name)
	}
	sort.Strings(b.names)
	return b, nil
}

// episodeTools are the tools an episode's calls run: its own instances
// (env.ToolEpisode) where it has them, else the environment's.
func (b *toolBox) episodeTools(ep env.Episode) (map[string]env.Tool, error) {
	te, ok := ep.(env.ToolEpisode)
	if !ok {
		return b.tools, nil
	}
	own := te.Tools()
	if own == nil {
		return b.tools, nil
	}
	m := make(map[string]env.Tool, len(own))
	for _, t := range own {
		if _, declared := b.specs[t.Name()]; !declared {
			return nil, fmt.Errorf("the episode's tool %q is not among the environment's (%s)", t.Name(), strings.Join(b.names, ", "))
		}
		m[t.Name()] = t
	}
	for _, n := range b.names {
		if _, ok := m[n]; !ok {
			m[n] = b.tools[n]
		}
	}
	return m, nil
}

// toolTurn is what the tool loop made of one assistant turn.
type toolTurn struct {
	// assistant is the turn as a message: its text outside the calls and
	// the calls that could be read, as the chat template would take them.
	assistant chat.Message
	// results are the tool messages, one per call, in order.
	results []chat.Message
	// calls counts the calls by tool name (a known tool's; other names are
	// counted only in the total); total and errors count all calls and the
	// ones that came back as errors.
	calls         map[string]int
	total, errors int
}

// run reads the calls in an assistant turn's text and runs them in
// order. A call that cannot be read, names no tool, has arguments the
// schema refuses, or fails, gets its error as its result, so the model
// can fix it in the next turn; none of them ends the episode.
func (b *toolBox) run(ctx context.Context, tools map[string]env.Tool, text string) toolTurn {
	parsed := b.format.ParseWithTools(text, b.schemas)
	tt := toolTurn{assistant: chat.Message{Role: "assistant", Content: parsed.Content}, calls: map[string]int{}}
	if parsed.Reasoning != "" {
		tt.assistant.ReasoningContent = &parsed.Reasoning
	}
	if len(parsed.Calls) == 0 {
		if b.format != tokenizer.ToolCallsHarmony {
			// Formats whose turn is its content as written; harmony's
			// content is its final channel.
			tt.assistant.Content = text
		}
		return tt
	}
	for _, c := range parsed.Calls {
		tt.total++
		result, err := b.call(ctx, tools, c)
		if _, known := b.specs[c.Name]; known {
			tt.calls[c.Name]++
		}
		if c.Err == "" {
			var tc chat.ToolCall
			tc.Type, tc.Function.Name, tc.Function.Arguments = "function", c.Name, c.Arguments
			tt.assistant.ToolCalls = append(tt.assistant.ToolCalls, tc)
		}
		if err != nil {
			tt.errors++
			result = err.Error()
		}
		tt.results = append(tt.results, chat.Message{Role: "tool", Content: result, Name: c.Name})
	}
	return tt
}

// call runs one parsed call; a panicking tool is an error like any other.
func (b *toolBox) call(ctx context.Context, tools map[string]env.Tool, c tokenizer.ParsedToolCall) (result string, err error) {
	if c.Err != "" {
		return "", fmt.Errorf("%s", c.Err)
	}
	spec, ok := b.specs[c.Name]
	if !ok {
		return "", fmt.Errorf("unknown tool %q; the tools are %s", c.Name, strings.Join(b.names, ", "))
	}
	if err := env.CheckToolArgs(spec, c.Arguments); err != nil {
		return "", err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s failed: panic: %v (at %s)", c.Name, r, panicLine(debug.Stack()))
		}
	}()
	return tools[c.Name].Call(ctx, c.Arguments)
}

// toolMetrics are the counters a tool episode reports: tool_calls (every
// call, readable or not), tool_errors (those answered with an error) and
// tool_calls/<name> for each declared tool, 0 when never called, so means
// over a batch count every rollout.
func (b *toolBox) toolMetrics(t *Trajectory) map[string]float64 {
	m := map[string]float64{"tool_calls": float64(t.ToolCalls), "tool_errors": float64(t.ToolErrors)}
	for _, n := range b.names {
		m["tool_calls/"+n] = float64(t.toolCallsBy[n])
	}
	return m
}
