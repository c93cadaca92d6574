package tokenizer

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

type chatCase struct {
	Name                string            `json:"name"`
	Messages            []chat.Message    `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
	EnableThinking      *bool             `json:"enable_thinking"`
	Rendered            string            `json:"rendered"`
}

// TestChatTemplateQwen3 renders Qwen3's template over the conversations of
// chat-qwen3.json and compares with @huggingface/jinja's rendering (the
// engine of transformers.js), then checks the rendered prompt's ids against
// the HF tokenizers reference of the same text in the corpus.
func TestChatTemplateQwen3(t *testing.T) {
	tok := qwen3(t)
	var cases []chatCase
	if err := json.Unmarshal(readGz(t, filepath.Join(testdata, "chat-qwen3.json")), &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 8 {
		t.Fatalf("chat-qwen3.json has %d cases; regenerate it", len(cases))
	}
	lines := corpus(t)
	refs := readLines(t, filepath.Join(testdata, "ref-qwen3.jsonl.gz"))
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := tok.ApplyChatTemplate(c.Messages, ChatOptions{
				AddGenerationPrompt: c.AddGenerationPrompt, EnableThinking: c.EnableThinking, Tools: c.Tools,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != c.Rendered {
				t.Fatalf("rendering differs\n got: %q\nwant: %q", got, c.Rendered)
			}
			i := slices.Index(lines, got)
			if i < 0 {
				t.Fatal("rendered prompt is not in corpus.jsonl; regenerate the corpus")
			}
			var want []int32
			if err := json.Unmarshal(refs[i], &want); err != nil {
				t.Fatal(err)
			}
			if ids := tok.Encode(got); !slices.Equal(ids, want) {
				t.Fatalf("ids of the rendered prompt differ from HF:\n%s", diffIDs(tok, ids, want))
			}
		})
	}
}

func TestChatTemplateErrors(t *testing.T) {
	msgs := []chat.Message{{Role: "user", Content: "hi"}}
	for _, tc := range []struct{ name, tmpl, want string }{
		{"syntax", "{% for m in messages %}{{ m.content }}", "chat template"},
		{"unknown filter", "{{ messages | no_such_filter }}", "no_such_filter"},
		{"raise_exception", "{{ raise_exception('roles must alternate') }}", "roles must alternate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RenderChatTemplate(tc.tmpl, msgs, ChatOptions{}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one mentioning %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans several lines: %q", err)
			}
		})
	}
	bad := []chat.Message{{Role: "assistant", ToolCalls: []chat.ToolCall{{}}}}
	bad[0].ToolCalls[0].Function.Arguments = json.RawMessage(`{"a":`)
	if _, err := RenderChatTemplate("{{ messages }}", bad, ChatOptions{}, nil); err == nil || !strings.Contains(err.Error(), "messages[0].tool_calls[0].function.arguments") {
		t.Fatalf("malformed arguments: got %v", err)
	}
	noTemplate, err := FromJSON(readGz(t, filepath.Join(testdata, "qwen3/tokenizer.json.gz")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noTemplate.ApplyChatTemplate(msgs, ChatOptions{}); err == nil || !strings.Contains(err.Error(), "no chat_template") {
		t.Fatalf("missing template: got %v", err)
	}
}

func TestToJSONPythonStyle(t *testing.T) {
	tools := []json.RawMessage{json.RawMessage(`{"z": 1, "a": [1.5, 2, "é\"\n<>&\u2028"], "m": {"k": null, "b": true, "f": 100000.0, "e": 1e-7}}`)}
	got, err := RenderChatTemplate("{{ tools[0] | tojson }}|{{ tools[0] | tojson(indent=2) }}", nil, ChatOptions{Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// What Python prints for json.dumps(x, ensure_ascii=False) and with indent=2.
	want := "{\"z\": 1, \"a\": [1.5, 2, \"é\\\"\\n<>&\u2028\"], \"m\": {\"k\": null, \"b\": true, \"f\": 100000.0, \"e\": 1e-07}}|" +
		"{\n  \"z\": 1,\n  \"a\": [\n    1.5,\n    2,\n    \"é\\\"\\n<>&\u2028\"\n  ],\n  \"m\": {\n    \"k\": null,\n    \"b\": true,\n    \"f\": 100000.0,\n    \"e\": 1e-07\n  }\n}"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// TestPythonSemantics: the filters and indexing that differ between gonja
// and Jinja2 give what Python gives (the expected strings are Python's).
func TestPythonSemantics(t *testing.T) {
	tools := []json.RawMessage{json.RawMessage(`{"z": 1, "a": null, "m": [1, 2]}`)}
	for tmpl, want := range map[string]string{
		"{{ ['a'][-1] }}|{{ ['a', 'b'][-2] }}|{{ ['a'][-2] }}|{{ ['a'][1] }}":            "a|a||",
		"{{ 'x'.split('<think>')[-1].upper() }}":                                         "X",
		"{{ 'héllo'[1] }}{{ 'héllo'[-5] }}|{{ 'ab'[2] }}|{{ '😀x'[-1] }}":                 "éh||x",
		"{% for k, v in tools[0]|items %}{{ k }}={{ v|string }},{% endfor %}":            "z=1,a=None,m=[1, 2],",
		"{{ tools[0]['m'][-1] }}{{ tools[0].m[0] }}|{{ tools[0]['nope'] }}|":             "21||",
		"{% set ns = namespace(v=3) %}{{ ns['v'] }}|{{ none|string }}|{{ true|string }}": "3|None|True",
	} {
		got, err := RenderChatTemplate(tmpl, nil, ChatOptions{Tools: tools}, nil)
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", tmpl, got, err, want)
		}
	}
}
