package tokenizer

import (
	"bytes"
	"encoding/json"
	"strings"
)

const pythonTag = "<|python_tag|>"

// parseLlama3 reads Llama 3.1+'s JSON tool calls. A turn is a call when it
// starts with <|python_tag|>, or when it starts with a JSON object that has
// a "name" (Llama's template asks for {"name": ..., "parameters": ...});
// then all of it is calls — objects separated by ';' or whitespace — and
// the content is empty, as the template writes such a turn. Any other turn
// is plain content, so an answer that merely starts with '{' is not taken
// for a call. Text after <|python_tag|> that is not JSON (Llama's builtin
// python-call syntax) is a call with Err set.
func parseLlama3(text string) ParsedTurn {
	body := strings.TrimSpace(text)
	tagged := strings.HasPrefix(body, pythonTag)
	if tagged {
		body = strings.TrimSpace(strings.TrimPrefix(body, pythonTag))
	}
	if !tagged && !looksLikeLlamaCall(body) {
		return ParsedTurn{Content: text}
	}
	var turn ParsedTurn
	dec := json.NewDecoder(strings.NewReader(body))
	for {
		var obj json.RawMessage
		if err := dec.Decode(&obj); err != nil {
			turn.Calls = append(turn.Calls, ParsedToolCall{Err: "tool call is not valid JSON: " + err.Error() +
				`; write {"name": "<tool>", "parameters": {...}}`})
			return turn
		}
		obj = bytes.TrimSpace(obj)
		if len(obj) == 0 || obj[0] != '{' {
			turn.Calls = append(turn.Calls, ParsedToolCall{Err: `tool call is not a JSON object; write {"name": "<tool>", "parameters": {...}}`})
			return turn
		}
		turn.Calls = append(turn.Calls, decodeCall(obj, "parameters", "arguments"))
		rest := strings.TrimLeft(body[dec.InputOffset():], " \t\r\n;")
		if rest == "" {
			return turn
		}
		dec = json.NewDecoder(strings.NewReader(rest))
		body = rest
	}
}

// looksLikeLlamaCall: the text starts with a JSON object (or what is meant
// to be one) with a "name" key — a call, well-formed or not.
func looksLikeLlamaCall(body string) bool {
	if !strings.HasPrefix(body, "{") {
		return false
	}
	var first map[string]json.RawMessage
	if err := json.NewDecoder(strings.NewReader(body)).Decode(&first); err == nil {
		_, ok := first["name"]
		return ok
	}
	return strings.Contains(body, `"name"`)
}
