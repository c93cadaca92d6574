package env

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Tool is a function the model may call during an episode. Its schema is
// shown to the model through the chat template's tools variable; its
// result (or its error's text) goes back to the model as a tool message.
type Tool interface {
	// Name is the function name the model calls.
	Name() string
	// Schema is the tool as an OpenAI function definition:
	// {"type": "function", "function": {"name", "description", "parameters"}}
	// with parameters a JSON Schema object.
	Schema() json.RawMessage
	// Call runs the tool with the arguments the model wrote, already
	// checked against the schema's required keys and types (CheckToolArgs).
	// An error is shown to the model as the call's result, and counted.
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// ToolEnvironment is an environment whose model turns may call tools:
// rollout renders its tools into the prompt, runs the calls it reads from
// each assistant turn and answers with their results. A turn without a
// call goes to the episode's Respond as usual (which, for a question and
// answer task, ends the episode).
type ToolEnvironment interface {
	Environment
	Tools() []Tool
}

// ToolEpisode is implemented by episodes with their own tool instances —
// state that lives for one episode, such as a sandboxed interpreter whose
// variables persist across calls. Their names must be the environment's
// (the prompt, rendered before the episode starts, shows the
// environment's schemas); nil means the environment's tools. An episode
// that holds resources also implements io.Closer: rollout closes every
// episode when it ends, however it ends.
type ToolEpisode interface {
	Tools() []Tool
}

// ToolsOf returns e's tools (nil for an environment without tools).
func ToolsOf(e Environment) []Tool {
	if te, ok := e.(ToolEnvironment); ok {
		return te.Tools()
	}
	return nil
}

// ToolReplyTokens is the reply room (ReplySizer) the tool environments
// grpo ships keep per turn: a turn's tool results are often longer than a
// game's feedback line.
const ToolReplyTokens = 1024

// ToolSpec is a tool's schema, read: the function's name, its one-line
// description and its parameters' JSON Schema.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ParseToolSchema reads an OpenAI function definition (the {"type":
// "function", "function": {...}} wrapper, or the function object alone).
func ParseToolSchema(raw json.RawMessage) (ToolSpec, error) {
	var wrapped struct {
		Type     string    `json:"type"`
		Function *ToolSpec `json:"function"`
	}
	if err := json.Unmarshal(raw, &wrapped); err != nil {
		return ToolSpec{}, fmt.Errorf("tool schema is not a JSON object: %v", err)
	}
	var s ToolSpec
	if wrapped.Function != nil {
		if wrapped.Type != "" && wrapped.Type != "function" {
			return ToolSpec{}, fmt.Errorf("tool schema type %q: only \"function\" tools exist", wrapped.Type)
		}
		s = *wrapped.Function
	} else if err := json.Unmarshal(raw, &s); err != nil {
		return ToolSpec{}, err
	}
	if s.Name == "" {
		return ToolSpec{}, errors.New(`tool schema has no function "name"`)
	}
	if len(s.Parameters) == 0 || string(s.Parameters) == "null" {
		s.Parameters = json.RawMessage(`{"type": "object", "properties": {}}`)
	}
	if _, err := parseParams(s.Parameters); err != nil {
		return ToolSpec{}, fmt.Errorf("tool %s: parameters: %v", s.Name, err)
	}
	return s, nil
}

// Summary is the description's first line, for listings.
func (s ToolSpec) Summary() string {
	line, _, _ := strings.Cut(strings.TrimSpace(s.Description), "\n")
	return line
}

// FuncTool is a Tool from a Go function and a schema.
type FuncTool struct {
	Spec ToolSpec
	Func func(ctx context.Context, args json.RawMessage) (string, error)
}

// NewFuncTool builds a tool named name with a description, a parameters
// JSON Schema ("" for none) and the function that runs it.
func NewFuncTool(name, description, parameters string, fn func(ctx context.Context, args json.RawMessage) (string, error)) (*FuncTool, error) {
	spec := ToolSpec{Name: name, Description: description}
	if parameters != "" {
		spec.Parameters = json.RawMessage(parameters)
	}
	raw, err := json.Marshal(functionSchema{"function", spec})
	if err != nil {
		return nil, fmt.Errorf("tool %s: %v", name, err)
	}
	if spec, err = ParseToolSchema(raw); err != nil {
		return nil, err
	}
	return &FuncTool{Spec: spec, Func: fn}, nil
}

func (t *FuncTool) Name() string { return t.Spec.Name }

func (t *FuncTool) Schema() json.RawMessage {
	raw, _ := json.Marshal(functionSchema{"function", t.Spec})
	return raw
}

// functionSchema is the OpenAI wrapper, with "type" first as OpenAI and
// vLLM write it (the chat template prints keys in this order).
type functionSchema struct {
	Type     string   `json:"type"`
	Function ToolSpec `json:"function"`
}

func (t *FuncTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.Func(ctx, args)
}
