package tokenizer

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
)

// FuzzChatTemplate: a chat template is untrusted code from a downloaded
// model. Whatever its text, a render ends within its bounds with output or
// one line of error: no crash (a stack overflow would kill the fuzzer), no
// hang, no output past MaxBytes.
func FuzzChatTemplate(f *testing.F) {
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(readGz(f, filepath.Join(testdata, "qwen3/tokenizer_config.json.gz")), &cfg); err != nil {
		f.Fatal(err)
	}
	f.Add(cfg.ChatTemplate, "hello <think>x</think>")
	qwen35 := readGz(f, filepath.Join(testdata, "qwen35/chat_template.jinja"))
	f.Add(string(qwen35), "plan\n</think>\n\n<tool_call>\n<function=f>\n</function>\n</tool_call>")
	f.Add("{{ messages[-3].content[-1] }}{{ messages[99] }}{{ 'é'[0] }}{{ (messages|list)[-1]['role'] }}{{ ns[0] }}", "x")
	for _, tmpl := range []string{
		"{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}",
		"{{ bos_token }}{% for m in messages %}{{ '[INST] ' + m.content + ' [/INST]' if m.role == 'user' else m.content + eos_token }}{% endfor %}",
		"{% set ns = namespace(n=0) %}{% for m in messages | reverse %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}{{ messages | tojson(indent=2) }}",
		`{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}`,
		`{% for i in range(100000000) %}x{% endfor %}`,
		`{{ "x" * 10000000000 }}{{ raise_exception("no") }}`,
		`{% for x in [1] recursive %}{{ loop([x]) }}{% endfor %}`,
	} {
		f.Add(tmpl, "hi")
	}
	// Small bounds keep each input fast: the fuzzer re-runs an interesting
	// input many times while minimizing it.
	limits := ChatLimits{MaxDepth: 50, MaxSteps: 1 << 12, MaxBytes: 1 << 18, Timeout: 100 * time.Millisecond}
	f.Fuzz(func(t *testing.T, tmpl, content string) {
		msgs := []chat.Message{{Role: "system", Content: "s"}, {Role: "user", Content: content}, {Role: "assistant", Content: content}}
		// A render that hangs never returns to the checks below; the
		// watchdog makes the fuzzer report it, with the stacks.
		watchdog := time.AfterFunc(5*time.Second, func() {
			buf := make([]byte, 1<<20)
			panic(fmt.Sprintf("render of %q hangs:\n%s", tmpl, buf[:runtime.Stack(buf, true)]))
		})
		defer watchdog.Stop()
		start := time.Now()
		out, err := RenderChatTemplate(tmpl, msgs, ChatOptions{AddGenerationPrompt: true, Limits: limits}, map[string]any{"bos_token": "<s>", "eos_token": "</s>"})
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("render took %v", took)
		}
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if len(out) > limits.MaxBytes {
			t.Fatalf("output of %d bytes past MaxBytes", len(out))
		}
	})
}
