package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/scripted"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// factsEnv is a tool environment: lookup(key) reads a fact, add(a, b)
// adds integers, fail() always errors. The reward is 1 when the final
// answer says 5. closed counts episodes closed.
type factsEnv struct {
	tools    []env.Tool
	maxTurns int
	closed   *atomic.Int32
	own      bool // episodes bring their own lookup tool
}

func newFactsEnv(t *testing.T, maxTurns int) *factsEnv {
	t.Helper()
	lookup, err := env.NewFuncTool("lookup", "Look up a fact by key.\nKeys are lower-case words.",
		`{"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"], "additionalProperties": false}`,
		func(_ context.Context, args json.RawMessage) (string, error) {
			var a struct{ Key string }
			json.Unmarshal(args, &a)
			if a.Key == "alpha" {
				return "7", nil
			}
			return "", fmt.Errorf("no fact %q", a.Key)
		})
	if err != nil {
		t.Fatal(err)
	}
	add, err := env.NewFuncTool("add", "Add two integers.",
		`{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}`,
		func(_ context.Context, args json.RawMessage) (string, error) {
			var a struct{ A, B int }
			json.Unmarshal(args, &a)
			return fmt.Sprint(a.A + a.B), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	fail, _ := env.NewFuncTool("fail", "Always fails.", "", func(context.Context, json.RawMessage) (string, error) {
		panic("tool exploded")
	})
	return &factsEnv{tools: []env.Tool{lookup, add, fail}, maxTurns: maxTurns, closed: new(atomic.Int32)}
}

func (e *factsEnv) ID() string                             { return "facts" }
func (e *factsEnv) Examples(string) ([]env.Example, error) { return nil, nil }
func (e *factsEnv) Tools() []env.Tool                      { return e.tools }
func (e *factsEnv) MaxTurns() int                          { return e.maxTurns }
func (e *factsEnv) Rubric() *rubric.Rubric                 { return saysFive }
func (e *factsEnv) NewEpisode(env.Example) env.Episode {
	ep := &factsEpisode{closed: e.closed}
	if e.own {
		ep.tools, _ = env.NewFuncTool("lookup", "per-episode", `{"type": "object", "properties": {"key": {"type": "string"}}}`,
			func(context.Context, json.RawMessage) (string, error) { return "episode's own", nil })
	}
	return ep
}

type factsEpisode struct {
	closed *atomic.Int32
	tools  *env.FuncTool
}

func (*factsEpisode) Respond(context.Context, string) ([]chat.Message, bool, error) {
	return nil, true, nil
}
func (ep *factsEpisode) Close() error { ep.closed.Add(1); return nil }
func (ep *factsEpisode) Tools() []env.Tool {
	if ep.tools == nil {
		return nil
	}
	return []env.Tool{ep.tools}
}

var saysFive, _ = rubric.Weighted(rubric.Term{Name: "five", Weight: 1, Func: rubric.Reward(func(r rubric.Rollout) float64 {
	if strings.Contains(r.LastAssistant(), "5") {
		return 1
	}
	return 0
})})

// scriptedModel is a small random Qwen3 over tok's vocabulary that plays
// turns (package scripted).
func scriptedModel(t *testing.T, tok *tokenizer.Tokenizer, turns ...string) *model.Model {
	t.Helper()
	be, err := scripted.New(cpu.New(), tok, turns...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := *vocabModel(t, tok).Config
	return model.NewRandom(&cfg, be, 3)
}

func call(name, args string) chat.ToolCall {
	var c chat.ToolCall
	c.Type, c.Function.Name, c.Function.Arguments = "function", name, json.RawMessage(args)
	return c
}

func factsPrompt() []chat.Message {
	return []chat.Message{{Role: "system", Content: "Use the tools."}, {Role: "user", Content: "What is alpha, and what is 2+3?"}}
}

// TestToolConversationIsTheTemplate is issue 15's bar: a Qwen3
// conversation with tools — system, user, an assistant turn with two tool
// calls, two tool results, a final assistant turn — played by a scripted
// policy through the sampler, the tool loop and Qwen3's real template:
// the trained tokens are exactly the template's rendering of the whole
// conversation (with the tools), and the recorded messages are that
// conversation.
func TestToolConversationIsTheTemplate(t *testing.T) {
	tok := qwen3Tokenizer(t)
	turn1 := "<think>\nI need both facts.\n</think>\n\n" +
		"<tool_call>\n{\"name\": \"lookup\", \"arguments\": {\"key\": \"alpha\"}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>"
	turn2 := "<think>\nBoth are in.\n</think>\n\nalpha is 7 and 2+3 is 5."
	m := scriptedModel(t, tok, turn1, turn2)
	e := newFactsEnv(t, 10)
	exs := []env.Example{{ID: "q", Prompt: factsPrompt()}}
	trajs, err := Local(context.Background(), m, tok, e, exs, 1, rolloutParams100(), 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := trajs[0]
	if tr.Turns != 2 || len(tr.Errors) != 0 || tr.Reward != 1 {
		t.Fatalf("%d turns, errors %q, reward %v; want 2 turns, none, 1", tr.Turns, tr.Errors, tr.Reward)
	}
	conv := []chat.Message{
		{Role: "assistant", Content: "<think>\nI need both facts.\n</think>\n", ToolCalls: []chat.ToolCall{call("lookup", `{"key": "alpha"}`), call("add", `{"a": 2, "b": 3}`)}},
		{Role: "tool", Content: "7", Name: "lookup"},
		{Role: "tool", Content: "5", Name: "add"},
		{Role: "assistant", Content: turn2},
	}
	got, _ := json.Marshal(tr.Messages)
	want, _ := json.Marshal(conv)
	if string(got) != string(want) {
		t.Errorf("messages:\ngot  %s\nwant %s", got, want)
	}
	var schemas []json.RawMessage
	for _, tl := range e.tools {
		schemas = append(schemas, tl.Schema())
	}
	full, err := tok.ApplyChatTemplate(append(factsPrompt(), conv...), tokenizer.ChatOptions{Tools: schemas})
	if err != nil {
		t.Fatal(err)
	}
	// The model's last token is <|im_end|>; the template's "\n" after it
	// is not sampled.
	wantIDs := tok.Encode(strings.TrimSuffix(full, "\n"))
	gotIDs := append(slices.Clone(tr.PromptTokens), tr.Tokens...)
	if !slices.Equal(gotIDs, wantIDs) {
		t.Errorf("trained tokens differ from the template's rendering:\ngot  %q\nwant %q", tok.Decode(gotIDs), tok.Decode(wantIDs))
	}
	if !strings.Contains(tok.Decode(tr.PromptTokens), `"name": "lookup", "description": "Look up a fact by key.`) {
		t.Errorf("the prompt does not show the tools: %q", tok.Decode(tr.PromptTokens))
	}
	checkPartition(t, tok, tr)
	checkLogprobs(t, m, tr)
	wantMetrics := map[string]float64{"tool_calls": 2, "tool_errors": 0, "tool_calls/lookup": 1, "tool_calls/add": 1, "tool_calls/fail": 0}
	if fmt.Sprint(tr.ToolMetrics) != fmt.Sprint(wantMetrics) {
		t.Errorf("tool metrics %v, want %v", tr.ToolMetrics, wantMetrics)
	}
	if n := e.closed.Load(); n != 1 {
		t.Errorf("%d episodes closed, want 1", n)
	}
}

func rolloutParams100() sampler.Params {
	p := rolloutParams()
	p.MaxTokens = 100
	return p
}

// tinyChatMLTokenizer is the byte tokenizer of package tinymodel, whose
// ChatML template renders no tools.
func tinyChatMLTokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	dir := t.TempDir()
	if err := tinymodel.WriteByteTokenizer(dir); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestToolErrorsGoBackToTheModel: a call that is not JSON, one naming no
// tool, arguments the schema refuses (missing, mistyped, unknown), a
// tool that errors and one that panics each come back as that call's
// result, counted as errors, and the episode goes on; max_turns ends an
// episode that keeps calling.
func TestToolErrorsGoBackToTheModel(t *testing.T) {
	tok := qwen3Tokenizer(t)
	calls := []string{
		`{"name": "lookup", "arguments": {"key": }`,
		`{"name": "search", "arguments": {}}`,
		`{"name": "add", "arguments": {"a": 1}}`,
		`{"name": "add", "arguments": {"a": 1, "b": "two"}}`,
		`{"name": "lookup", "arguments": {"key": "alpha", "extra": 1}}`,
		`{"name": "lookup", "arguments": {"key": "beta"}}`,
		`{"name": "fail", "arguments": {}}`,
	}
	var turn1 strings.Builder
	for _, c := range calls {
		turn1.WriteString("<tool_call>\n" + c + "\n</tool_call>\n")
	}
	again := "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>"
	m := scriptedModel(t, tok, turn1.String(), again, again, "never played")
	e := newFactsEnv(t, 3)
	p := rolloutParams()
	p.MaxTokens = 400
	trajs, err := Local(context.Background(), m, tok, e, []env.Example{{ID: "q", Prompt: factsPrompt()}}, 1, p, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := trajs[0]
	if tr.Turns != 3 || len(tr.Errors) != 0 {
		t.Fatalf("%d turns, errors %q; want 3 (max_turns), none", tr.Turns, tr.Errors)
	}
	wantResults := []string{
		"tool call is not a valid JSON object",
		`unknown tool "search"; the tools are add, fail, lookup`,
		`add: missing required argument "b"`,
		`add: argument "b" must be integer, not a string`,
		`lookup: unexpected argument "extra"; it takes "key"`,
		`no fact "beta"`,
		"fail failed: panic: tool exploded (at ",
	}
	var results []string
	for _, msg := range tr.Messages[1 : 1+len(calls)] {
		if msg.Role != "tool" {
			t.Fatalf("messages %+v: want %d tool results after the first turn", tr.Messages, len(calls))
		}
		results = append(results, msg.Content)
	}
	for i, w := range wantResults {
		if !strings.HasPrefix(results[i], w) {
			t.Errorf("result %d: %q, want it to start with %q", i, results[i], w)
		}
	}
	if !strings.Contains(results[6], "rollout/tools_test.go:") {
		t.Errorf("the panic's location %q is not the tool's", results[6])
	}
	// The call that is not JSON has no name to count it under.
	wantMetrics := map[string]float64{"tool_calls": 9, "tool_errors": 7, "tool_calls/lookup": 2, "tool_calls/add": 4, "tool_calls/fail": 1}
	if fmt.Sprint(tr.ToolMetrics) != fmt.Sprint(wantMetrics) {
		t.Errorf("tool metrics %v, want %v", tr.ToolMetrics, wantMetrics)
	}
	if len(tr.Messages[0].ToolCalls) != len(calls)-1 {
		t.Errorf("the first turn records %d readable calls, want %d", len(tr.Messages[0].ToolCalls), len(calls)-1)
	}
}

// TestEpisodeTools: an episode's own tool instance runs its calls, and a
// model without a tool format is refused with a clear error.
func TestEpisodeTools(t *testing.T) {
	tok := qwen3Tokenizer(t)
	m := scriptedModel(t, tok, "<tool_call>\n{\"name\": \"lookup\", \"arguments\": {\"key\": \"alpha\"}}\n</tool_call>", "5")
	e := newFactsEnv(t, 4)
	e.own = true
	trajs, err := Local(context.Background(), m, tok, e, []env.Example{{ID: "q", Prompt: factsPrompt()}}, 1, rolloutParams100(), 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if msgs := trajs[0].Messages; len(msgs) != 3 || msgs[1].Content != "episode's own" || trajs[0].Reward != 1 {
		t.Errorf("messages %+v, reward %v; want the episode's lookup result and reward 1", msgs, trajs[0].Reward)
	}
	if _, err := newToolBox(tinyChatMLTokenizer(t), e); err == nil || !strings.Contains(err.Error(), "renders no tool calls") {
		t.Errorf("a template without tools: %v", err)
	}
	bad := newFactsEnv(t, 1)
	bad.tools = append(bad.tools, bad.tools[0])
	if _, err := newToolBox(tok, bad); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a tool declared twice: %v", err)
	}
}

// TestQwenXMLToolCalls: with a Qwen3.5 tokenizer (its template writes XML
// calls) the tool loop reads <function=…> calls and types their values by
// the tools' schemas, so add's integers arrive as integers and pass the
// schema check.
func TestQwenXMLToolCalls(t *testing.T) {
	tok, err := tokenizer.Load("../testdata/tokenizer/qwen35/tiny")
	if err != nil {
		t.Fatal(err)
	}
	e := newFactsEnv(t, 2)
	b, err := newToolBox(tok, e)
	if err != nil {
		t.Fatal(err)
	}
	text := "Adding.\n\n<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n<parameter=b>\n3\n</parameter>\n</function>\n</tool_call>" +
		"\n<tool_call>\n<function=lookup>\n<parameter=key>\n</tool_call>"
	tt := b.run(context.Background(), b.tools, text)
	if tt.total != 2 || tt.errors != 1 || len(tt.results) != 2 || tt.results[0].Content != "5" ||
		!strings.Contains(tt.results[1].Content, `parameter "key" of "lookup" is not closed by </parameter>`) {
		t.Fatalf("turn %+v", tt)
	}
	if tt.assistant.Content != "Adding." || len(tt.assistant.ToolCalls) != 1 || string(tt.assistant.ToolCalls[0].Function.Arguments) != `{"a": 2, "b": 3}` {
		t.Errorf("assistant message %+v", tt.assistant)
	}
}
