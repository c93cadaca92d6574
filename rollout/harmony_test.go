package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

func gptossTokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.Load("../testdata/tokenizer/gptoss/tiny")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestHarmonyToolTurn: a gpt-oss turn that ends in a call (as the model
// writes it: analysis, then the call with its recipient after the channel,
// stopped by <|call|>) runs the tool, and the tokens appended after
// <|call|> are the tool's message and the next generation prompt exactly
// as gpt-oss's template renders that conversation (the call with its
// analysis, then the result) after the call's <|call|>; a second call turn
// continues the same way, and a turn cut off before <|call|> gets it.
func TestHarmonyToolTurn(t *testing.T) {
	tok := gptossTokenizer(t)
	e := newFactsEnv(t, 4)
	b, err := newToolBox(tok, e)
	if err != nil {
		t.Fatal(err)
	}
	opts := tokenizer.ChatOptions{Tools: b.schemas, ReasoningEffort: "low"}
	conv := factsPrompt()
	for _, c := range []struct {
		sampled, stop, result string
	}{
		{`<|channel|>analysis<|message|>Look it up.<|end|><|start|>assistant<|channel|>commentary to=functions.lookup <|constrain|>json<|message|>{"key":"alpha"}`, "<|call|>", `"7"`},
		{`<|channel|>analysis<|message|>Now add.<|end|><|start|>assistant<|channel|>commentary to=functions.add <|constrain|>json<|message|>{"a":2,"b":3}`, "", `"5"`},
	} {
		tt := b.run(context.Background(), b.tools, c.sampled)
		if tt.total != 1 || tt.errors != 0 || tt.assistant.ReasoningContent == nil {
			t.Fatalf("%q: turn %+v", c.sampled, tt)
		}
		conv = append(conv, tt.assistant)
		got, err := replyText(tok.ApplyChatTemplate, conv, tt.results, c.stop, opts, tok.ToolCallFormat())
		if err != nil {
			t.Fatal(err)
		}
		conv = append(conv, tt.results...)
		// The template's own rendering of the conversation so far, after
		// the last call's <|call|>.
		full, err := tok.ApplyChatTemplate(conv, tokenizer.ChatOptions{Tools: b.schemas, ReasoningEffort: "low", AddGenerationPrompt: true})
		if err != nil {
			t.Fatal(err)
		}
		want := full[strings.LastIndex(full, tokenizer.HarmonyCallEnd)+len(tokenizer.HarmonyCallEnd):]
		if c.stop == "" {
			want = tokenizer.HarmonyCallEnd + want
		}
		name := tt.assistant.ToolCalls[0].Function.Name
		if got != want || !strings.HasPrefix(strings.TrimPrefix(got, tokenizer.HarmonyCallEnd), "<|start|>functions."+name+" to=assistant<|channel|>commentary<|message|>"+c.result+"<|end|>") ||
			!strings.HasSuffix(got, "<|start|>assistant") {
			t.Errorf("reply after %s:\n got %q\nwant %q", name, got, want)
		}
	}
}

// TestHarmonyStops: generation stops on harmony's two ends of a turn,
// <|return|> and <|call|>, whether or not generation_config.json lists
// them, and not on <|end|>, which ends a message within a turn.
func TestHarmonyStops(t *testing.T) {
	withConfig := gptossTokenizer(t)
	bare, err := tokenizer.LoadFiles("../testdata/tokenizer/gptoss/tiny/tokenizer.json", "../testdata/tokenizer/gptoss/tiny/tokenizer_config.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]*tokenizer.Tokenizer{"with generation_config.json": withConfig, "without": bare} {
		stops := map[int32]bool{}
		for _, id := range sampler.StopTokenIDs(tok) {
			stops[id] = true
		}
		for s, want := range map[string]bool{"<|return|>": true, "<|call|>": true, "<|endoftext|>": true, "<|end|>": false} {
			id, _ := tok.TokenID(s)
			if stops[id] != want {
				t.Errorf("%s: %s stops: %v, want %v", name, s, stops[id], want)
			}
		}
	}
}

// TestHarmonyFinalTurn: a turn without a call is its final channel as the
// content and its analysis as the reasoning.
func TestHarmonyFinalTurn(t *testing.T) {
	b, err := newToolBox(gptossTokenizer(t), newFactsEnv(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	tt := b.run(context.Background(), b.tools, "<|channel|>analysis<|message|>7+5<|end|><|start|>assistant<|channel|>final<|message|>12")
	if want := (chat.Message{Role: "assistant", Content: "12"}); tt.assistant.Content != want.Content || tt.assistant.ReasoningContent == nil || *tt.assistant.ReasoningContent != "7+5" || tt.total != 0 {
		t.Errorf("turn %+v", tt)
	}
}

// TestReasoningEffortRendered: Options.ReasoningEffort is the template's
// reasoning_effort, so a gpt-oss prompt's system message says it (and
// "medium", the template's default, when unset).
func TestReasoningEffortRendered(t *testing.T) {
	tok := gptossTokenizer(t)
	e := newFactsEnv(t, 1)
	for effort, want := range map[string]string{"high": "Reasoning: high\n", "": "Reasoning: medium\n"} {
		st, err := newSetup(tok, e, Options{ReasoningEffort: effort})
		if err != nil {
			t.Fatal(err)
		}
		p := renderPrompts(tok, []env.Example{{Prompt: factsPrompt()}}, st.chat)
		if p[0].err != nil {
			t.Fatal(p[0].err)
		}
		if text := tok.Decode(p[0].ids); !strings.Contains(text, want) || !strings.Contains(text, "type lookup = (_: {") {
			t.Errorf("reasoning_effort %q: prompt %q", effort, text)
		}
	}
}

// TestEndpointSendsReasoningEffort: EndpointOptions.ReasoningEffort goes
// out as the request's reasoning_effort, and is left out when unset.
func TestEndpointSendsReasoningEffort(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		e, ok := req["reasoning_effort"].(string)
		if !ok {
			e = "<absent>"
		}
		got = append(got, e)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}`)
	}))
	defer srv.Close()
	c, err := endpoints.New([]endpoints.Endpoint{{ID: "e", Model: "m", URL: srv.URL + "/v1"}}, endpoints.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, effort := range []string{"low", ""} {
		if _, err := EndpointGenerator(c, EndpointOptions{ReasoningEffort: effort}).Generate(context.Background(), []chat.Message{{Role: "user", Content: "hi"}}, sampler.DefaultParams()); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || got[0] != "low" || got[1] != "<absent>" {
		t.Errorf("sent %q, want [low <absent>]", got)
	}
}

// TestHarmonyUserReply: after a final answer that ended on <|return|>, the
// tokens appended for the user's next message are the template's user
// message and generation prompt, without the <|end|> the template closes
// an earlier answer with (the model's <|return|> closed it); a turn cut off
// by max_tokens gets the <|end|>.
func TestHarmonyUserReply(t *testing.T) {
	tok := gptossTokenizer(t)
	conv := []chat.Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello."}}
	reply := []chat.Message{{Role: "user", Content: "More?"}}
	for stop, want := range map[string]string{
		"<|return|>": "<|start|>user<|message|>More?<|end|><|start|>assistant",
		"":           "<|end|><|start|>user<|message|>More?<|end|><|start|>assistant",
	} {
		got, err := replyText(tok.ApplyChatTemplate, conv, reply, stop, tokenizer.ChatOptions{}, tok.ToolCallFormat())
		if err != nil || got != want {
			t.Errorf("stop %q: got %q, %v; want %q", stop, got, err, want)
		}
	}
}

// TestHarmonyAssistantMessage: the rubric and the episode see a gpt-oss
// turn's final channel as its content (its analysis as reasoning), as a
// vLLM server returns it; other formats' turns are their text.
func TestHarmonyAssistantMessage(t *testing.T) {
	text := "<|channel|>analysis<|message|>3 letters<|end|><|start|>assistant<|channel|>final<|message|><reversed_text>cba</reversed_text>"
	m := assistantMessage(tokenizer.ToolCallsHarmony, text)
	if m.Content != "<reversed_text>cba</reversed_text>" || m.ReasoningContent == nil || *m.ReasoningContent != "3 letters" {
		t.Errorf("harmony: %+v", m)
	}
	if m := assistantMessage(tokenizer.ToolCallsHermes, text); m.Content != text || m.ReasoningContent != nil {
		t.Errorf("hermes: %+v", m)
	}
}

// TestHarmonyConversationTrainsWhatWasSampled is issue 32's bar: a gpt-oss
// conversation with two tool calls — analysis and a call stopped by
// <|call|>, the tool's answer, a second call, its answer, analysis and a
// final answer stopped by <|return|> — played by a scripted policy through
// the sampler, the tool loop and gpt-oss's template: the trajectory is
// exactly the prompt (with Reasoning: low and the tools), the sampled
// turns and the harmony tool messages between them, the model's tokens
// only its turns (with their log-probs), and the messages the rubric sees
// are the calls, the results and the final channel.
func TestHarmonyConversationTrainsWhatWasSampled(t *testing.T) {
	tok := gptossTokenizer(t)
	turns := []string{
		`<|channel|>analysis<|message|>Look it up.<|end|><|start|>assistant<|channel|>commentary to=functions.lookup <|constrain|>json<|message|>{"key":"alpha"}<|call|>`,
		`<|channel|>commentary to=functions.add <|constrain|>json<|message|>{"a":2,"b":3}<|call|>`,
		`<|channel|>analysis<|message|>Both in.<|end|><|start|>assistant<|channel|>final<|message|>alpha is 7 and 2+3 is 5.<|return|>`,
	}
	replies := []string{
		`<|start|>functions.lookup to=assistant<|channel|>commentary<|message|>"7"<|end|><|start|>assistant`,
		`<|start|>functions.add to=assistant<|channel|>commentary<|message|>"5"<|end|><|start|>assistant`,
	}
	m := scriptedModel(t, tok, turns...)
	e := newFactsEnv(t, 10)
	trajs, err := Local(context.Background(), m, tok, e, []env.Example{{ID: "q", Prompt: factsPrompt()}}, 1, rolloutParams100(), 1, Options{ReasoningEffort: "low"})
	if err != nil {
		t.Fatal(err)
	}
	tr := trajs[0]
	if tr.Turns != 3 || len(tr.Errors) != 0 || tr.Reward != 1 {
		t.Fatalf("%d turns, errors %q, reward %v; want 3 turns, none, 1", tr.Turns, tr.Errors, tr.Reward)
	}
	var wantIDs []int32
	var wantMask []bool
	for i, turn := range turns {
		ids := tok.Encode(turn)
		wantIDs = append(wantIDs, ids...)
		for range ids {
			wantMask = append(wantMask, true)
		}
		if i < len(replies) {
			ids = tok.Encode(replies[i])
			wantIDs = append(wantIDs, ids...)
			for range ids {
				wantMask = append(wantMask, false)
			}
		}
	}
	if !slices.Equal(tr.Tokens, wantIDs) || !slices.Equal(tr.ModelMask, wantMask) {
		t.Errorf("trajectory:\ngot  %q\nwant %q", tok.Decode(tr.Tokens), tok.Decode(wantIDs))
	}
	if p := tok.Decode(tr.PromptTokens); !strings.Contains(p, "Reasoning: low\n") || !strings.Contains(p, "type add = (_: {") || !strings.HasSuffix(p, "<|start|>assistant") {
		t.Errorf("prompt %q", p)
	}
	reasoning := []string{"Look it up.", "Both in."}
	wantMsgs := []chat.Message{
		{Role: "assistant", ReasoningContent: &reasoning[0], ToolCalls: []chat.ToolCall{call("lookup", `{"key":"alpha"}`)}},
		{Role: "tool", Content: "7", Name: "lookup"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{call("add", `{"a":2,"b":3}`)}},
		{Role: "tool", Content: "5", Name: "add"},
		{Role: "assistant", Content: "alpha is 7 and 2+3 is 5.", ReasoningContent: &reasoning[1]},
	}
	got, _ := json.Marshal(tr.Messages)
	want, _ := json.Marshal(wantMsgs)
	if string(got) != string(want) {
		t.Errorf("messages:\ngot  %s\nwant %s", got, want)
	}
	checkPartition(t, tok, tr)
	checkLogprobs(t, m, tr)
}
