package tokenizer

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
)

// renderBounded renders tmpl and returns its error, failing the test when
// the render succeeds, takes long, or the error is not one clear line.
func renderBounded(t *testing.T, tmpl string, opts ChatOptions) error {
	t.Helper()
	runtime.GC()
	peak := watchHeap()
	start := time.Now()
	_, err := RenderChatTemplate(tmpl, []chat.Message{{Role: "user", Content: "hi"}}, opts, nil)
	elapsed := time.Since(start)
	heap := peak()
	if err == nil {
		t.Fatal("the render succeeded; want a bound to stop it")
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error spans several lines: %q", err)
	}
	// Generous against a loaded CI machine; the unbounded renders ran for
	// minutes (or crashed) before.
	if elapsed > 15*time.Second {
		t.Fatalf("the bounded render took %v", elapsed)
	}
	if heap > 1<<30 {
		t.Fatalf("the bounded render held %d MiB of heap", heap>>20)
	}
	t.Logf("%v after %v, heap peak %d MiB", err, elapsed.Round(time.Millisecond), heap>>20)
	return err
}

// watchHeap samples the live heap every millisecond until the returned
// function is called, which returns the peak seen.
func watchHeap() func() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	var peak atomic.Uint64
	peak.Store(read())
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if v := read(); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}

func wantMention(t *testing.T, err error, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
}

// TestChatTemplateRecursionBounded: a macro that calls itself without end
// crashed the process with a 1 GB Go stack overflow, which no recover()
// catches; a depth counter stops it first.
func TestChatTemplateRecursionBounded(t *testing.T) {
	for _, tc := range []struct{ name, tmpl string }{
		{"macro", `{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}`},
		{"macro through if", `{% macro f(n) %}{% if true %}{{ f(n+1) }}{% endif %}{% endmacro %}{{ f(0) }}`},
		{"recursive loop", `{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}`},
		{"call block", `{% macro f() %}{% call f() %}x{% endcall %}{% endmacro %}{{ f() }}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := renderBounded(t, tc.tmpl, ChatOptions{})
			wantMention(t, err, "the chat template", "nested deeper than 200")
		})
	}
}

// TestChatTemplateLoopBounded: range(100000000) hung with 3 GB RSS (gonja
// materialises the loop's items first); nested loops multiply.
func TestChatTemplateLoopBounded(t *testing.T) {
	for _, tc := range []struct{ name, tmpl, want string }{
		{"range", `{% for i in range(100000000) %}x{% endfor %}`, "range(100000000)"},
		{"nested", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, "more than 262144 loop iterations and macro calls"},
		{"macro fan-out", `{% macro a(n) %}{% if n > 0 %}{{ a(n-1) }}{{ a(n-1) }}{% endif %}{% endmacro %}{{ a(60) }}`, "more than 262144 loop iterations and macro calls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantMention(t, renderBounded(t, tc.tmpl, ChatOptions{}), tc.want)
		})
	}
}

// TestChatTemplateSizeBounded: output and string values are capped before
// they are allocated, so no render holds gigabytes.
func TestChatTemplateSizeBounded(t *testing.T) {
	for _, tc := range []struct{ name, tmpl string }{
		{"output", `{% for i in range(100000) %}{{ "x" * 1000 }}{% endfor %}`},
		{"repeat", `{{ "x" * 10000000000 }}`},
		{"doubling", `{% set ns = namespace(s="x") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}`},
		{"macro output", `{% macro big() %}{% for i in range(100000) %}{{ "y" * 1000 }}{% endfor %}{% endmacro %}{% set b = big() %}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantMention(t, renderBounded(t, tc.tmpl, ChatOptions{}), "larger than 32 MiB")
		})
	}
	t.Run("list concat", func(t *testing.T) {
		tmpl := `{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}`
		wantMention(t, renderBounded(t, tmpl, ChatOptions{}), "list longer than 262144 items")
	})
}

// TestChatTemplateTimeBounded: a render that stays under the step and
// size bounds but runs long is stopped by its deadline.
func TestChatTemplateTimeBounded(t *testing.T) {
	// Each step sorts a long list: few steps, much time.
	tmpl := `{% set l = range(200000) | list %}{% for i in range(200000) %}{{ (l | sort | first) * 0 }}{% endfor %}`
	err := renderBounded(t, tmpl, ChatOptions{Limits: ChatLimits{Timeout: 200 * time.Millisecond}})
	wantMention(t, err, "ran longer than 200ms")
}

// TestChatTemplateParseBounded: gonja's parser recurses once per nesting
// level, so a template of a million "(" would overflow the stack while
// compiling.
func TestChatTemplateParseBounded(t *testing.T) {
	for _, tc := range []struct{ name, tmpl string }{
		{"brackets", "{{ " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + " }}"},
		{"blocks", strings.Repeat("{% if true %}", 20000) + strings.Repeat("{% endif %}", 20000)},
		{"chain", "{{ 1" + strings.Repeat(" ~ 1", 100000) + " }}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantMention(t, renderBounded(t, tc.tmpl, ChatOptions{}), "nested deeper than 200")
		})
	}
}

// TestChatTemplateNoLoader: transformers renders chat templates without a
// loader; gonja's default one read any local file into the prompt.
func TestChatTemplateNoLoader(t *testing.T) {
	for _, tag := range []string{`{% include "/etc/hostname" %}`, `{% import "/etc/hostname" as h %}`, `{% from "/etc/hostname" import x %}`, `{% extends "/etc/hostname" %}`} {
		err := renderBounded(t, tag, ChatOptions{})
		wantMention(t, err, "cannot load other templates")
	}
}

// TestChatTemplateSourceSizeBounded: a template larger than any chat
// format is refused before gonja lexes it.
func TestChatTemplateSourceSizeBounded(t *testing.T) {
	wantMention(t, renderBounded(t, strings.Repeat("x", 2<<20), ChatOptions{}), "more than 1 MiB")
}

// TestChatTemplateNegativeRepeat: gonja passed "x" * -1 to strings.Repeat,
// which panics; Python gives "".
func TestChatTemplateNegativeRepeat(t *testing.T) {
	got, err := RenderChatTemplate(`[{{ "x" * -1 }}]`, nil, ChatOptions{}, nil)
	if err != nil || got != "[]" {
		t.Fatalf("got %q, %v; want \"[]\"", got, err)
	}
}

// TestChatTemplateBoundNamesSource: the error of a model's template names
// the tokenizer_config.json it came from.
func TestChatTemplateBoundNamesSource(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "tokenizer.json", readGz(t, filepath.Join(testdata, "qwen3/tokenizer.json.gz")))
	cfg, _ := json.Marshal(map[string]any{"chat_template": `{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}`})
	writeFile(t, dir, "tokenizer_config.json", cfg)
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tok.ApplyChatTemplate([]chat.Message{{Role: "user", Content: "hi"}}, ChatOptions{})
	if err == nil {
		t.Fatal("the recursive template rendered")
	}
	wantMention(t, err, filepath.Join(dir, "tokenizer_config.json"), "nested deeper than 200")
}

// TestChatTemplateBoundsLeaveRealTemplates: the bounds change nothing for
// a long real conversation (Qwen3's template, 2000 turns with tools).
func TestChatTemplateBoundsLeaveRealTemplates(t *testing.T) {
	tok := qwen3(t)
	var msgs []chat.Message
	for i := 0; i < 1000; i++ {
		msgs = append(msgs, chat.Message{Role: "user", Content: strings.Repeat("question ", 20)}, chat.Message{Role: "assistant", Content: strings.Repeat("answer ", 20)})
	}
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "f", "parameters": {}}}`)}
	got, err := tok.ApplyChatTemplate(msgs, ChatOptions{AddGenerationPrompt: true, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(got, "<|im_start|>"); n != 2002 { // system (tools), 2000 turns, generation prompt
		t.Fatalf("%d turns rendered", n)
	}
}

// TestChatTemplateSelfContainingValues: gonja turns a value into text
// recursively, so a namespace holding itself overflowed the stack (found
// by FuzzChatTemplate) and a list of itself twice, 60 times over, asked for
// 2^60 bytes; values are measured before they become text.
func TestChatTemplateSelfContainingValues(t *testing.T) {
	for _, tc := range []struct{ name, tmpl, want string }{
		{"namespace holds itself", `{% set ns = namespace(n=0) %}{% set ns.n = ns %}{{ ns.n }}`, "nested deeper than 200 levels"},
		{"through an operator", `{% set ns = namespace(n=0) %}{% set ns.n = ns %}{{ ns ~ "x" }}`, "nested deeper than 200 levels"},
		{"through a filter", `{% set ns = namespace(n=0) %}{% set ns.n = [ns] %}{{ ns | string }}`, "nested deeper than 200 levels"},
		{"shared halves", `{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l }}`, "larger than 32 MiB"},
		{"filter width", `{{ "x" | center(10000000000) }}`, "passes 10000000000 to a filter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantMention(t, renderBounded(t, tc.tmpl, ChatOptions{}), tc.want)
		})
	}
}

// TestToJSONDictLiteral: a dict written in the template is a gonja Dict,
// which tojson printed as {"Pairs": [...]}.
func TestToJSONDictLiteral(t *testing.T) {
	got, err := RenderChatTemplate(`{{ {"b": 1, "a": [true, none]} | tojson }}`, nil, ChatOptions{}, nil)
	if want := `{"b": 1, "a": [true, null]}`; err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}
