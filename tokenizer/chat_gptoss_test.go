package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type gptossCase struct {
	chatCase
	ReasoningEffort string         `json:"reasoning_effort"`
	Vars            map[string]any `json:"vars"`
	Error           string         `json:"error"`
}

func gptossTemplate(t testing.TB) string {
	src, err := os.ReadFile(filepath.Join(testdata, "gptoss", "chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// TestChatTemplateGptOss renders gpt-oss's template (the harmony format)
// with gonja over the conversations of chat-gptoss.json and compares with
// Jinja2's rendering (scripts/chat-goldens/gptoss_chat.py): the system
// message with Reasoning: from reasoning_effort and the date from
// strftime_now, the developer message with instructions and the tools as a
// TypeScript namespace (every branch of its type rendering), analysis kept
// or dropped by turn, calls in the commentary channel, tool results, the
// training render ending in <|return|>, and the template's own errors.
func TestChatTemplateGptOss(t *testing.T) {
	var golden struct {
		Date  string       `json:"date"`
		Cases []gptossCase `json:"cases"`
	}
	if err := json.Unmarshal(readGz(t, filepath.Join(testdata, "chat-gptoss.json")), &golden); err != nil {
		t.Fatal(err)
	}
	if len(golden.Cases) < 20 {
		t.Fatalf("chat-gptoss.json has %d cases; regenerate it", len(golden.Cases))
	}
	now, err := time.ParseInLocation("2006-01-02T15:04:05", golden.Date, time.Local)
	if err != nil {
		t.Fatal(err)
	}
	tpl := gptossTemplate(t)
	for _, c := range golden.Cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := RenderChatTemplate(tpl, c.Messages, ChatOptions{
				AddGenerationPrompt: c.AddGenerationPrompt, Tools: c.Tools,
				ReasoningEffort: c.ReasoningEffort, Now: now, Vars: c.Vars,
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

// TestStrftime checks the directives against Python's time.strftime for
// one afternoon date (values written out from Python 3).
func TestStrftime(t *testing.T) {
	at := time.Date(2025, 8, 5, 15, 4, 9, 0, time.UTC)
	for format, want := range map[string]string{
		"%Y-%m-%d":       "2025-08-05",
		"%y %j %p %I":    "25 217 PM 03",
		"%H:%M:%S":       "15:04:09",
		"%a %A %b %B":    "Tue Tuesday Aug August",
		"100%% %Q tail%": "100% %Q tail%",
	} {
		if got := strftime(at, format); got != want {
			t.Errorf("strftime(%q) = %q, want %q", format, got, want)
		}
	}
}
