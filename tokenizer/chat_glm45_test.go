package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func glm45Template(t testing.TB) string {
	src, err := os.ReadFile(filepath.Join(testdata, "glm45", "chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// TestChatTemplateGLM45 renders the GLM-4.5 template of testdata/
// tokenizer/glm45 with gonja over the conversations of chat-glm45.json and
// compares with Jinja2's rendering (scripts/chat-goldens/glm45_chat.py):
// tools, <tool_call>NAME<arg_key>…</arg_key><arg_value>…</arg_value> calls
// with string and JSON values, <|observation|> tool responses, thinking
// kept after the last user turn and split out of content, and
// enable_thinking=false's /nothink and empty think block.
func TestChatTemplateGLM45(t *testing.T) {
	var cases []struct {
		chatCase
		Error string `json:"error"`
	}
	if err := json.Unmarshal(readGz(t, filepath.Join(testdata, "chat-glm45.json")), &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Fatalf("chat-glm45.json has %d cases; regenerate it", len(cases))
	}
	tpl := glm45Template(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := RenderChatTemplate(tpl, c.Messages, ChatOptions{
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
