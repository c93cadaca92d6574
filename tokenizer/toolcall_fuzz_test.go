package tokenizer

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzToolCalls: the parsers read text a model sampled, which can be
// anything. Whatever it is, Parse returns without panicking, every call is
// either well-formed (a name and a JSON object of arguments) or carries an
// error, and a Hermes turn yields at most one call per <tool_call>. A call
// in the canonical form appended to the text is read back exactly.
func FuzzToolCalls(f *testing.F) {
	for _, s := range []string{
		"plain text", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
		"<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": [1]}\"}</tool_call><tool_call>{",
		"<think><tool_call></think>", `<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b"}`,
		`{"name": 3}`, `{"name": "x", "parameters": null};;`, "<tool_call></tool_call></tool_call>",
		"<tool_call>\n<function=f>\n<parameter=o>\n{\"a\": [1, 2.5e3]}\n</parameter>\n<parameter=n>\n-0\n</parameter>\n</function>\n</tool_call>",
		"<tool_call><function=f><parameter=s></parameter></parameter></function></tool_call><tool_call><function=",
		"<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": 1}<|call|>",
		"<|start|><|start|> to=<|channel|><|message|><|end|><|start|>assistant to=functions.<|message|>", "<|message|><|constrain|>",
		"<tool_call>f\n<arg_key>k</arg_key>\n<arg_value>{\"a\": 1}</arg_value>\n</tool_call><tool_call>g<arg_key>",
	} {
		f.Add(s, "f", `{"k": "v"}`)
	}
	f.Fuzz(func(t *testing.T, text, name, args string) {
		for _, format := range []ToolCallFormat{ToolCallsHermes, ToolCallsLlama3, ToolCallsQwenXML, ToolCallsHarmony, ToolCallsGLM, ToolCallsNone} {
			turn := format.ParseWithTools(text, xmlTools)
			for i, c := range turn.Calls {
				if c.Err == "" && (c.Name == "" || !json.Valid(c.Arguments) || !strings.HasPrefix(string(c.Arguments), "{")) {
					t.Fatalf("%v %q: call %d has no error but name %q, arguments %q", format, text, i, c.Name, c.Arguments)
				}
			}
			if format == ToolCallsHarmony && len(turn.Calls) > strings.Count(text, "to=") {
				t.Fatalf("%q: %d harmony calls from %d recipients", text, len(turn.Calls), strings.Count(text, "to="))
			}
			if (format == ToolCallsHermes || format == ToolCallsQwenXML || format == ToolCallsGLM) && len(turn.Calls) > strings.Count(text, hermesOpen) {
				t.Fatalf("%q: %d calls from %d <tool_call>", text, len(turn.Calls), strings.Count(text, hermesOpen))
			}
		}
		var obj map[string]any
		if name == "" || !utf8.ValidString(name) || json.Unmarshal([]byte(args), &obj) != nil || obj == nil || strings.Contains(text, "</think>") || strings.Contains(text, hermesOpen) {
			return
		}
		compact, _ := json.Marshal(obj)
		qname, _ := json.Marshal(name)
		call := fmt.Sprintf("<tool_call>\n{\"name\": %s, \"arguments\": %s}\n</tool_call>", qname, compact)
		turn := ToolCallsHermes.Parse(text + "\n" + call)
		if len(turn.Calls) != 1 || turn.Calls[0].Name != name || string(turn.Calls[0].Arguments) != string(compact) || turn.Content != text {
			t.Fatalf("%q + canonical call %s: read back %+v", text, call, turn)
		}
	})
}

// FuzzQwenXML: a call in Qwen3.5's canonical form (as its template writes
// one with a string argument) appended to any text without tool-call tags
// reads back exactly, whatever the name, argument and value hold, unless
// the value contains the closing tag itself. The value is read untyped and
// typed by a schema ("i" an integer) alike without a panic.
func FuzzQwenXML(f *testing.F) {
	f.Add("Let me check.", "get_weather", "city", "Zürich\nline 2")
	f.Add("", "f", "i", " 12 ")
	f.Add("x\n\n", "a.b-c/d", "k", "\n<parameter=k>\n")
	f.Fuzz(func(t *testing.T, text, name, arg, value string) {
		if strings.Contains(text, hermesOpen) || strings.Contains(text, "</think>") || strings.Contains(value, xmlParamClose) ||
			name == "" || strings.ContainsAny(name, "{}<>\"' \t\r\n") || arg == "" || strings.ContainsAny(arg, ">\n") ||
			!utf8.ValidString(text) || !utf8.ValidString(name) || !utf8.ValidString(arg) || !utf8.ValidString(value) {
			return
		}
		call := xmlCall(name, arg, value)
		for _, tools := range [][]json.RawMessage{nil, {json.RawMessage(`{"name": "` + strings.ReplaceAll(name, "\\", "") + `", "parameters": {"properties": {"i": {"type": "integer"}}}}`)}} {
			turn := ToolCallsQwenXML.ParseWithTools(text+"\n\n"+call, tools)
			if len(turn.Calls) != 1 || turn.Calls[0].Err != "" || turn.Calls[0].Name != name || turn.Content != strings.TrimRight(text, "\n") {
				t.Fatalf("%q + %q: read back %+v", text, call, turn)
			}
			var args map[string]any
			if err := json.Unmarshal(turn.Calls[0].Arguments, &args); err != nil || len(args) != 1 {
				t.Fatalf("%q: arguments %s: %v", call, turn.Calls[0].Arguments, err)
			}
			if s, isString := args[arg].(string); tools == nil && (!isString || s != value) {
				t.Fatalf("%q: value %q read back as %#v", call, value, args[arg])
			}
		}
	})
}

// FuzzHarmony: a gpt-oss turn of an analysis message holding any text
// without harmony's special tokens, then a call as gpt-oss writes it
// (recipient after the channel, <|constrain|>json) or as its template
// renders it (recipient before the channel), reads back exactly: the text
// as the reasoning, one call with the name and arguments written.
func FuzzHarmony(f *testing.F) {
	f.Add("Need the weather.", "get_weather", `{"city": "Zürich"}`, true)
	f.Add("", "f", `{}`, false)
	f.Add(" to=x <|", "a.b", `{"k": [1, {"n": null}]}`, true)
	f.Fuzz(func(t *testing.T, analysis, name, args string, gptForm bool) {
		var obj map[string]any
		if name == "" || strings.Contains(name, "<|") ||
			!utf8.ValidString(name) || !utf8.ValidString(analysis) || strings.Contains(analysis, "<|") ||
			json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
			return
		}
		for _, r := range name {
			if unicode.IsSpace(r) {
				return
			}
		}
		compact, _ := json.Marshal(obj)
		call := " to=functions." + name + "<|channel|>commentary json<|message|>" + string(compact)
		if gptForm {
			call = "<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>" + string(compact)
		}
		text := "<|channel|>analysis<|message|>" + analysis + "<|end|><|start|>assistant" + call
		got := ToolCallsHarmony.Parse(text)
		want := ParsedTurn{Reasoning: analysis, Calls: []ParsedToolCall{{Name: name, Arguments: compact}}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", text, got, want)
		}
	})
}

// FuzzGLM: a call in GLM-4.5's checkpoint layout appended to any text
// without tool-call tags reads back exactly, whatever the name, key and
// string value (the schema's "string", so kept as written less the
// surrounding whitespace vLLM strips), unless they hold the format's tags.
func FuzzGLM(f *testing.F) {
	f.Add("Let me check.", "get_weather", "city", "Zürich\nline 2")
	f.Add("", "f", "k", " {\"a\": 1} ")
	f.Fuzz(func(t *testing.T, text, name, key, value string) {
		if name == "" || strings.ContainsAny(name, "{}<>\"' \t\r\n") || !utf8.ValidString(name) || !utf8.ValidString(key) || !utf8.ValidString(value) || !utf8.ValidString(text) ||
			strings.Contains(text, "<tool_call>") || strings.Contains(text, "</think>") ||
			strings.Contains(key, "</arg_key>") || strings.Contains(value, "</arg_value>") || strings.Contains(value, "<tool_call>") || strings.Contains(key, "<tool_call>") {
			return
		}
		if strings.TrimSpace(name) != name || strings.TrimSpace(text) != text {
			return
		}
		qn, _ := json.Marshal(name)
		qk, _ := json.Marshal(strings.TrimSpace(key))
		tools := []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"type": "function", "function": {"name": %s, "parameters": {"type": "object", "properties": {%s: {"type": "string"}}}}}`, qn, qk))}
		call := "<tool_call>" + name + "\n<arg_key>" + key + "</arg_key>\n<arg_value>" + value + "</arg_value>\n</tool_call>"
		got := ToolCallsGLM.ParseWithTools(text+"\n"+call, tools)
		var want map[string]string
		if len(got.Calls) != 1 || got.Calls[0].Name != name || got.Content != text || json.Unmarshal(got.Calls[0].Arguments, &want) != nil ||
			want[strings.TrimSpace(key)] != strings.TrimSpace(value) {
			t.Fatalf("%q + %q: read back %+v", text, call, got)
		}
	})
}
