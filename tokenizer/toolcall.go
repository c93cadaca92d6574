package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ToolCallFormat is how a model family writes tool calls in its turns. The
// chat template shows the model the format (it renders the tools and
// earlier calls); grpo reads the sampled text back with the matching
// parser, as vLLM's tool parsers do for a server.
type ToolCallFormat int

const (
	// ToolCallsNone: the chat template renders no tool calls grpo knows.
	ToolCallsNone ToolCallFormat = iota
	// ToolCallsHermes is Qwen2.5/Qwen3's (and Hermes'): each call a JSON
	// object {"name": ..., "arguments": {...}} inside
	// <tool_call>…</tool_call>, several per turn.
	ToolCallsHermes
	// ToolCallsLlama3 is Llama 3.1+'s JSON form: the turn is one or more
	// {"name": ..., "parameters": {...}} objects (separated by ';'),
	// optionally after <|python_tag|>.
	ToolCallsLlama3
	// ToolCallsQwenXML is Qwen3.5/3.6's (and Qwen3-Coder's): each call
	// <tool_call><function=NAME><parameter=ARG>VALUE</parameter>…
	// </function></tool_call> with raw values typed by the tool's schema
	// (vLLM's qwen3_coder parser).
	ToolCallsQwenXML
	// ToolCallsHarmony is gpt-oss's harmony format: each call a message
	// in the commentary channel addressed to=functions.NAME whose body is
	// the JSON arguments, ended by <|call|>; the final channel is the
	// content, analysis the reasoning.
	ToolCallsHarmony
	// ToolCallsGLM is GLM-4.5's (INTELLECT-3's family): each call
	// <tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>…
	// </tool_call>, values typed by the tool's schema (vLLM's glm45
	// parser).
	ToolCallsGLM
)

func (f ToolCallFormat) String() string {
	switch f {
	case ToolCallsHermes:
		return "hermes"
	case ToolCallsLlama3:
		return "llama3-json"
	case ToolCallsQwenXML:
		return "qwen3_coder"
	case ToolCallsHarmony:
		return "openai"
	case ToolCallsGLM:
		return "glm45"
	}
	return "none"
}

// ToolCallFormatNamed is the format whose String is name (model.Arch's
// ToolCalls names one per family).
func ToolCallFormatNamed(name string) (ToolCallFormat, bool) {
	for f := ToolCallsNone; f <= ToolCallsGLM; f++ {
		if f.String() == name {
			return f, true
		}
	}
	return ToolCallsNone, false
}

// ToolCallFormat tells the tool-call format from the chat template: a
// template that writes <function= and <parameter= inside <tool_call> is
// Qwen's XML form (llama.cpp tells it the same way); one that writes
// <tool_call> otherwise is Hermes-style; one that knows <|python_tag|> or
// the "parameters" key with an ipython role is Llama 3's; one that writes
// harmony's <|channel|> and <|call|> is gpt-oss's; one whose <tool_call>
// holds <arg_key>/<arg_value> pairs is GLM-4.5's.
func (t *Tokenizer) ToolCallFormat() ToolCallFormat {
	return TemplateToolCallFormat(t.cfg.chatTemplate)
}

// TemplateToolCallFormat is ToolCallFormat for a template's source.
func TemplateToolCallFormat(template string) ToolCallFormat {
	switch {
	case !strings.Contains(template, "tools"):
		return ToolCallsNone // the model would never see the tool schemas
	case strings.Contains(template, harmonyChannel) && strings.Contains(template, harmonyCall):
		return ToolCallsHarmony
	case strings.Contains(template, "<tool_call>") && strings.Contains(template, xmlFuncOpen) && strings.Contains(template, xmlParamOpen):
		return ToolCallsQwenXML
	case strings.Contains(template, "<tool_call>") && strings.Contains(template, glmKeyOpen) && strings.Contains(template, glmValueOpen):
		return ToolCallsGLM
	case strings.Contains(template, "<tool_call>"):
		return ToolCallsHermes
	case strings.Contains(template, "<|python_tag|>"), strings.Contains(template, "ipython") && strings.Contains(template, "parameters"):
		return ToolCallsLlama3
	}
	return ToolCallsNone
}

// ParsedToolCall is one call read from an assistant turn: its name and
// arguments (a JSON object, as written), or why it could not be read.
type ParsedToolCall struct {
	Name      string
	Arguments json.RawMessage
	// Err says what is wrong with the call's text ("" when it parsed); the
	// model gets it back as the call's result.
	Err string
}

// ParsedTurn is an assistant turn split into its text and its calls.
type ParsedTurn struct {
	// Content is the turn's text without the calls, as the chat template
	// would take it back in the message's content (so rendering Content and
	// the calls gives the turn again when the model wrote the canonical
	// form).
	Content string
	// Reasoning is the turn's thinking where the format sets it apart
	// from the content (harmony's analysis channel); "" otherwise.
	Reasoning string
	Calls     []ParsedToolCall
}

// Parse reads the tool calls in an assistant turn's text. Text with no
// call comes back as Content with no Calls; a call whose text is not a
// well-formed call is kept with Err set, so the model hears about it.
// Formats whose values need the tools' schemas read every value as a
// string here; use ParseWithTools.
func (f ToolCallFormat) Parse(text string) ParsedTurn {
	return f.ParseWithTools(text, nil)
}

// ParseWithTools is Parse with the tools the turn was offered (OpenAI
// tool definitions, as in ChatOptions.Tools), which type the values of
// ToolCallsQwenXML calls; JSON formats carry their types and ignore them.
func (f ToolCallFormat) ParseWithTools(text string, tools []json.RawMessage) ParsedTurn {
	switch f {
	case ToolCallsHermes:
		return parseHermes(text)
	case ToolCallsLlama3:
		return parseLlama3(text)
	case ToolCallsQwenXML:
		return parseQwenXML(text, tools)
	case ToolCallsHarmony:
		return parseHarmony(text)
	case ToolCallsGLM:
		return parseGLM(text, tools)
	}
	return ParsedTurn{Content: text}
}

// decodeCall reads one call object: a non-empty string "name" and an
// object of arguments under argsKey (or the other common key). Arguments
// written as a JSON string holding an object are accepted, as some models
// write them so; absent arguments are {}.
func decodeCall(obj []byte, argsKeys ...string) ParsedToolCall {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(obj, &fields); err != nil {
		return ParsedToolCall{Err: "tool call is not a valid JSON object: " + err.Error()}
	}
	var c ParsedToolCall
	if err := json.Unmarshal(fields["name"], &c.Name); err != nil || c.Name == "" {
		return ParsedToolCall{Err: `tool call has no "name" string; write {"name": "<tool>", ` + fmt.Sprintf("%q", argsKeys[0]) + `: {...}}`}
	}
	var raw json.RawMessage
	for _, k := range argsKeys {
		if v, ok := fields[k]; ok {
			raw = v
			break
		}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			raw = bytes.TrimSpace([]byte(s))
		}
	}
	switch {
	case len(raw) == 0 || string(raw) == "null":
		c.Arguments = json.RawMessage("{}")
	case raw[0] == '{' && json.Valid(raw):
		c.Arguments = raw
	default:
		c.Err = fmt.Sprintf("tool call %q: %q must be a JSON object of arguments", c.Name, argsKeys[0])
	}
	return c
}
