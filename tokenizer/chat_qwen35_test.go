package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type qwen35Case struct {
	chatCase
	Template string `json:"template"`
	Error    string `json:"error"`
}

// TestChatTemplateQwen35 renders Qwen3.5's two templates (4B and larger;
// 0.8B and 2B) with gonja over the conversations of chat-qwen35.json and
// compares with Jinja2's rendering (scripts/chat-goldens/qwen35_chat.py):
// tools in the system prompt, XML tool calls with string, number, boolean,
// null, object and array parameters, tool responses, reasoning kept or
// dropped by turn, enable_thinking and the templates' own errors.
func TestChatTemplateQwen35(t *testing.T) {
	var cases []qwen35Case
	if err := json.Unmarshal(readGz(t, filepath.Join(testdata, "chat-qwen35.json")), &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Fatalf("chat-qwen35.json has %d cases; regenerate it", len(cases))
	}
	templates := map[string]string{}
	for _, c := range cases {
		if _, ok := templates[c.Template]; !ok {
			src, err := os.ReadFile(filepath.Join(testdata, "qwen35", c.Template))
			if err != nil {
				t.Fatal(err)
			}
			templates[c.Template] = string(src)
		}
		t.Run(c.Name, func(t *testing.T) {
			got, err := RenderChatTemplate(templates[c.Template], c.Messages, ChatOptions{
				AddGenerationPrompt: c.AddGenerationPrompt, EnableThinking: c.EnableThinking, Tools: c.Tools,
			}, nil)
			if c.Error != "" {
				if err == nil || !strings.Contains(err.Error(), c.Error) {
					t.Fatalf("got %q, %v; want the error %q", got, err, c.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.Rendered {
				t.Fatalf("rendering differs\n got: %q\nwant: %q", got, c.Rendered)
			}
		})
	}
}
