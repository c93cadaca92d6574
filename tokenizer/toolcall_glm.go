package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

const (
	glmKeyOpen    = "<arg_key>"
	glmKeyClose   = "</arg_key>"
	glmValueOpen  = "<arg_value>"
	glmValueClose = "</arg_value>"
)

// parseGLM reads GLM-4.5's calls: <tool_call>NAME, then for each argument
// <arg_key>KEY</arg_key> and <arg_value>VALUE</arg_value> (whitespace
// between the parts, as the template writes newlines there or not), then
// </tool_call>. Blocks inside the turn's thinking (before its last
// </think>) are reasoning; the content is the text before the first call,
// as vLLM's glm45 parser returns it. Values are typed as that parser types
// them (glmValue). A block that is not well formed is a call with Err set;
// one whose </tool_call> is missing at the end of the turn or before the
// next <tool_call> is read if its arguments are complete.
func parseGLM(text string, tools []json.RawMessage) ParsedTurn {
	from := 0
	if i := strings.LastIndex(text, "</think>"); i >= 0 {
		from = i + len("</think>")
	}
	first := strings.Index(text[from:], hermesOpen)
	if first < 0 {
		return ParsedTurn{Content: text}
	}
	first += from
	turn := ParsedTurn{Content: strings.TrimRight(text[:first], "\n")}
	schemas := toolProperties(tools)
	rest := text[first:]
	for {
		i := strings.Index(rest, hermesOpen)
		if i < 0 {
			return turn
		}
		rest = rest[i+len(hermesOpen):]
		body, after, closed := strings.Cut(rest, hermesClose)
		if j := strings.Index(rest, hermesOpen); j >= 0 && (!closed || j < len(body)) {
			body, after, closed = rest[:j], rest[j:], false
		}
		turn.Calls = append(turn.Calls, readGLMCall(body, schemas))
		rest = after
	}
}

// readGLMCall reads the text between <tool_call> and </tool_call>.
func readGLMCall(body string, schemas map[string]map[string]json.RawMessage) ParsedToolCall {
	fail := func(format string, args ...any) ParsedToolCall {
		return ParsedToolCall{Err: fmt.Sprintf(format, args...) + "; write <tool_call>NAME then <arg_key>KEY</arg_key><arg_value>VALUE</arg_value> for each argument, then </tool_call>"}
	}
	name, s := body, ""
	if i := strings.IndexAny(body, "\n<"); i >= 0 {
		name, s = body[:i], body[i:]
	}
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return fail("<tool_call> names no function")
	case strings.ContainsAny(name, "{}<>\"' \t\r"):
		return fail("%q is not a function name", name)
	}
	props := schemas[name]
	args := newArgObject()
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		if s == "" {
			return ParsedToolCall{Name: name, Arguments: args.json()}
		}
		if !strings.HasPrefix(s, glmKeyOpen) {
			return fail("unexpected text %q in the call of %q, where <arg_key> belongs", clip(s, 20), name)
		}
		key, after, ok := strings.Cut(s[len(glmKeyOpen):], glmKeyClose)
		if !ok {
			return fail("<arg_key> in the call of %q is not closed by %s", name, glmKeyClose)
		}
		key = strings.TrimSpace(key)
		after = strings.TrimLeft(after, " \t\r\n")
		if !strings.HasPrefix(after, glmValueOpen) {
			return fail("argument %q of %q has no <arg_value>", key, name)
		}
		value, next, ok := strings.Cut(after[len(glmValueOpen):], glmValueClose)
		if !ok {
			return fail("argument %q of %q is not closed by %s", key, name, glmValueClose)
		}
		args.set(key, glmValue(strings.TrimSpace(value), props[key]))
		s = next
	}
}

// glmValue is vLLM's glm45 typing of a value (stripped of surrounding
// whitespace, as there): the text itself when the tool's schema gives the
// argument "type": "string"; otherwise the text read as JSON, else as a
// Python literal, else the text. Of Python's literals (ast.literal_eval)
// only True, False and None are read here; single-quoted strings and
// containers in Python syntax stay text.
func glmValue(text string, schema json.RawMessage) string {
	var b strings.Builder
	var s struct {
		Type json.RawMessage `json:"type"`
	}
	if schema != nil && json.Unmarshal(schema, &s) == nil {
		if t := typeNames(s.Type); len(t) == 1 && t[0] == "string" {
			writePyString(&b, text)
			return b.String()
		}
	}
	if v, err := pyJSON([]byte(text)); err == nil {
		return v
	}
	switch text {
	case "True":
		return "true"
	case "False":
		return "false"
	case "None":
		return "null"
	}
	writePyString(&b, text)
	return b.String()
}
