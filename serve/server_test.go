package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/sampler"
)

func user(text string) []map[string]any {
	return []map[string]any{{"role": "user", "content": text}}
}

// direct generates what the server should for one prompt and params: the
// sampler alone, on the server's model.
func direct(t *testing.T, f *fixture, prompt []int32, p sampler.Params) sampler.Turn {
	t.Helper()
	s, err := sampler.New(f.srv.m, f.srv.tok, sampler.Config{Slots: 1, MaxLen: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p.StopTokens = f.srv.stops
	turns, err := s.Generate(context.Background(), [][]int32{prompt}, []sampler.Params{p})
	if err != nil {
		t.Fatal(err)
	}
	return turns[0]
}

// TestChatMatchesTheSampler: a seeded chat completion's token ids are the
// sampler's for the rendered prompt and seed; content is their text
// without the stop token; log-probs line up with token_ids.
func TestChatMatchesTheSampler(t *testing.T) {
	f := newFixture(t, Config{Slots: 4})
	// reasoning_effort changes nothing for a template that does not read
	// it (Qwen3's): the prompt is the sampler's (reasoning_test.go).
	code, body := f.post(t, "/v1/chat/completions", map[string]any{"model": "tiny", "messages": user("hello"),
		"temperature": 0.8, "seed": 42, "max_tokens": 12, "logprobs": true, "top_logprobs": 3, "return_token_ids": true, "reasoning_effort": "high"})
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	resp := decodeJSON[endpoints.ChatResponse](t, body)
	want := direct(t, f, resp.PromptTokenIDs, params(0.8, 42, 12))
	c := resp.Choices[0]
	if !slices.Equal(c.TokenIDs, want.Tokens) {
		t.Fatalf("token_ids %v, sampler %v", c.TokenIDs, want.Tokens)
	}
	if got := f.srv.tok.Decode(resp.PromptTokenIDs); got != "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("prompt %q", got)
	}
	content := want.Tokens
	if want.StopToken {
		content = content[:len(content)-1]
	}
	if c.Message.Text() != f.srv.tok.Decode(content) && !strings.ContainsRune(c.Message.Text(), '\uFFFD') {
		t.Errorf("content %q, want %q", c.Message.Text(), f.srv.tok.Decode(content))
	}
	if c.Logprobs == nil || len(c.Logprobs.Content) != len(c.TokenIDs) {
		t.Fatalf("logprobs %+v for %d tokens", c.Logprobs, len(c.TokenIDs))
	}
	for k, e := range c.Logprobs.Content {
		if float32(e.Logprob) != want.Logprobs[k] || len(e.TopLogprobs) != 3 {
			t.Errorf("token %d: log-prob %v (sampler %v), %d alternatives", k, e.Logprob, want.Logprobs[k], len(e.TopLogprobs))
		}
	}
	if c.FinishReason != want.FinishReason || resp.Usage.CompletionTokens != len(want.Tokens) || resp.Usage.PromptTokens != len(resp.PromptTokenIDs) {
		t.Errorf("finish %q usage %+v", c.FinishReason, resp.Usage)
	}
}

func params(temp float64, seed uint64, maxTokens int) sampler.Params {
	p := sampler.DefaultParams()
	p.Temperature, p.Seed, p.MaxTokens = temp, seed, maxTokens
	return p
}

// TestStreamJoinsToTheWhole: the chunks of a streamed chat completion
// join to exactly the non-streamed one with the same seed, n = 2 included;
// every event parses, the last is [DONE], usage comes last when asked.
func TestStreamJoinsToTheWhole(t *testing.T) {
	f := newFixture(t, Config{Slots: 4})
	req := map[string]any{"model": "tiny", "messages": user("abc"), "seed": 7, "max_tokens": 20, "n": 2,
		"return_token_ids": true, "stop": []string{"e"}}
	_, body := f.post(t, "/v1/chat/completions", req)
	whole := decodeJSON[endpoints.ChatResponse](t, body)
	req["stream"] = true
	req["stream_options"] = map[string]any{"include_usage": true}
	data, _ := json.Marshal(req)
	resp, err := http.Post(f.url+"/v1/chat/completions", "application/json", strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	evs := events(t, resp.Body)
	if len(evs) < 4 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("events %q", evs)
	}
	text, ids, finish := make([]string, 2), make([][]int32, 2), make([]string, 2)
	var usage *endpoints.Usage
	for k, ev := range evs[:len(evs)-1] {
		c := decodeJSON[chatChunk](t, []byte(ev))
		if c.Object != "chat.completion.chunk" || c.ID == "" {
			t.Errorf("event %d: %s", k, ev)
		}
		if (k == 0) != (c.PromptTokenIDs != nil) {
			t.Errorf("event %d: prompt_token_ids %v", k, c.PromptTokenIDs)
		}
		if c.Usage != nil {
			usage = c.Usage
			if k != len(evs)-2 || len(c.Choices) != 0 {
				t.Errorf("usage in event %d of %d with %d choices", k, len(evs)-1, len(c.Choices))
			}
		}
		for _, ch := range c.Choices {
			if finish[ch.Index] != "" {
				t.Errorf("choice %d: a chunk after its finish", ch.Index)
			}
			if ch.Delta.Content != nil {
				text[ch.Index] += *ch.Delta.Content
			}
			ids[ch.Index] = append(ids[ch.Index], ch.TokenIDs...)
			if ch.FinishReason != nil {
				finish[ch.Index] = *ch.FinishReason
			}
		}
	}
	for i, c := range whole.Choices {
		if text[i] != c.Message.Text() || !slices.Equal(ids[i], c.TokenIDs) || finish[i] != c.FinishReason {
			t.Errorf("choice %d: streamed %q %v %q, whole %q %v %q", i, text[i], ids[i], finish[i], c.Message.Text(), c.TokenIDs, c.FinishReason)
		}
		if strings.Contains(c.Message.Text(), "e") {
			t.Errorf("choice %d: the stop string is in %q", i, c.Message.Text())
		}
	}
	if slices.Equal(whole.Choices[0].TokenIDs, whole.Choices[1].TokenIDs) {
		t.Error("the two choices are the same sample")
	}
	if usage == nil || usage.CompletionTokens != len(ids[0])+len(ids[1]) {
		t.Errorf("usage %+v", usage)
	}
}

// TestCompletionsTokenPromptEcho: a token-id prompt with echo and
// logprobs returns the prompt's text and log-probs (the first null) as
// the model scores them, then the completion's.
func TestCompletionsTokenPromptEcho(t *testing.T) {
	f := newFixture(t, Config{Slots: 2})
	prompt := []int32{104, 101, 108, 108, 111} // "hello"
	code, body := f.post(t, "/v1/completions", map[string]any{"model": "tiny", "prompt": prompt, "max_tokens": 5,
		"temperature": 0, "logprobs": 2, "echo": true, "return_token_ids": true})
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	resp := decodeJSON[endpoints.CompletionResponse](t, body)
	c := resp.Choices[0]
	if !strings.HasPrefix(c.Text, "hello") || !slices.Equal(c.PromptTokenIDs, prompt) {
		t.Errorf("text %q prompt ids %v", c.Text, c.PromptTokenIDs)
	}
	lp := c.Logprobs
	if lp == nil || len(lp.Tokens) != len(prompt)+len(c.TokenIDs) || lp.TokenLogprobs[0] != nil {
		t.Fatalf("logprobs %+v", lp)
	}
	want, err := f.srv.m.TokenLogprobs(append(slices.Clone(prompt), c.TokenIDs...), 1)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k < len(lp.Tokens); k++ {
		if d := *lp.TokenLogprobs[k] - float64(want[k-1]); d > 1e-4 || d < -1e-4 {
			t.Errorf("token %d: log-prob %v, model %v", k, *lp.TokenLogprobs[k], want[k-1])
		}
		if len(lp.TopLogprobs[k]) < 1 || len(lp.TopLogprobs[k]) > 3 {
			t.Errorf("token %d: %d alternatives", k, len(lp.TopLogprobs[k]))
		}
	}
	if lp.TextOffset[1] != 1 || lp.TextOffset[len(prompt)] != 5 {
		t.Errorf("text offsets %v", lp.TextOffset)
	}
}

// TestToolsReachThePrompt: tools are rendered through the chat template.
func TestToolsReachThePrompt(t *testing.T) {
	f := newFixture(t, Config{Slots: 2})
	tool := map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{"type": "object"}}}
	code, body := f.post(t, "/v1/chat/completions", map[string]any{"messages": user("weather?"), "tools": []any{tool},
		"tool_choice": "auto", "max_tokens": 2, "return_token_ids": true})
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	resp := decodeJSON[endpoints.ChatResponse](t, body)
	if p := f.srv.tok.Decode(resp.PromptTokenIDs); !strings.Contains(p, `"name": "get_weather"`) {
		t.Errorf("prompt %q has no tool", p)
	}
}

// TestLoRALoadedAtRunTime: an adapter loaded through vLLM's endpoint is
// listed, changes the greedy output, and is gone after unloading.
func TestLoRALoadedAtRunTime(t *testing.T) {
	f := newFixture(t, Config{Slots: 2})
	greedy := func(model string) (int, string) {
		code, body := f.post(t, "/v1/completions", map[string]any{"model": model, "prompt": "abc", "max_tokens": 8, "temperature": 0, "return_token_ids": true, "ignore_eos": true})
		if code != 200 {
			return code, string(body)
		}
		return code, fmt.Sprint(decodeJSON[endpoints.CompletionResponse](t, body).Choices[0].TokenIDs)
	}
	_, base := greedy("tiny")
	dir, _ := filepath.Abs(filepath.Join("..", "testdata", "lora", "ours"))
	if code, body := f.post(t, "/v1/load_lora_adapter", map[string]any{"lora_name": "rt", "lora_path": dir}); code != 200 || !strings.Contains(string(body), "Success") {
		t.Fatalf("load: %d %s", code, body)
	}
	if code, body := f.post(t, "/v1/load_lora_adapter", map[string]any{"lora_name": "rt", "lora_path": dir}); code != 400 {
		t.Errorf("loading twice: %d %s", code, body)
	}
	resp, err := http.Get(f.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct{ Data []modelCard }
	json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if len(models.Data) != 2 || models.Data[1].ID != "rt" || *models.Data[1].Parent != "tiny" {
		t.Errorf("models %+v", models.Data)
	}
	code, adapted := greedy("rt")
	if code != 200 || adapted == base {
		t.Errorf("with the adapter: %d %s, base %s", code, adapted, base)
	}
	if _, again := greedy("tiny"); again != base {
		t.Errorf("base after the adapter: %s, before %s", again, base)
	}
	if code, body := f.post(t, "/v1/unload_lora_adapter", map[string]any{"lora_name": "rt"}); code != 200 {
		t.Fatalf("unload: %d %s", code, body)
	}
	if code, _ := greedy("rt"); code != 404 {
		t.Errorf("after unloading: %d", code)
	}
}

// Test64ConcurrentStreams: 64 streamed chat requests over 8 slots all
// complete with well-formed chunks and [DONE].
func Test64ConcurrentStreams(t *testing.T) {
	f := newFixture(t, Config{Slots: 8, MaxQueue: 64})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, _ := json.Marshal(map[string]any{"messages": user(fmt.Sprint("q", i)), "max_tokens": 6, "stream": true, "seed": i})
			resp, err := http.Post(f.url+"/v1/chat/completions", "application/json", strings.NewReader(string(data)))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			evs := events(t, resp.Body)
			if resp.StatusCode != 200 || len(evs) < 2 || evs[len(evs)-1] != "[DONE]" {
				t.Errorf("request %d: %d %q", i, resp.StatusCode, evs)
				return
			}
			var finish string
			for _, ev := range evs[:len(evs)-1] {
				c := decodeJSON[chatChunk](t, []byte(ev))
				if len(c.Choices) == 1 && c.Choices[0].FinishReason != nil {
					finish = *c.Choices[0].FinishReason
				}
			}
			if finish != "stop" && finish != "length" {
				t.Errorf("request %d: finish %q", i, finish)
			}
		}()
	}
	wg.Wait()
	if st := f.srv.Stats(); st.Finished != 64 || st.Running != 0 || st.Waiting != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestDisconnectFreesTheSlot: with one slot, a client that goes away
// mid-stream is cancelled at the next step and the next request is
// served. The scheduler is held after the first step until the server
// has seen the disconnect, so the test does not race it.
func TestDisconnectFreesTheSlot(t *testing.T) {
	var once sync.Once
	f := newFixture(t, Config{Slots: 1}, func(s *Server) {
		s.sched.afterStepHook = func(running []*job) {
			// Hold on the long request's first step in flight; if the
			// disconnect was seen already it is not running any more.
			if len(running) > 0 && running[0].params[0].MaxTokens == 200 {
				once.Do(func() { <-running[0].ctx.Done() })
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	data, _ := json.Marshal(map[string]any{"messages": user("long"), "max_tokens": 200, "ignore_eos": true, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, "POST", f.url+"/v1/chat/completions", strings.NewReader(string(data)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil { // the role chunk: the stream has begun
		t.Fatal(err)
	}
	cancel() // the client goes away
	resp.Body.Close()
	code, body := f.post(t, "/v1/chat/completions", map[string]any{"messages": user("next"), "max_tokens": 3})
	if code != 200 {
		t.Fatalf("next request: %d %s", code, body)
	}
	if st := f.srv.Stats(); st.Cancelled != 1 || st.Finished != 1 || st.GeneratedTokens >= 200 {
		t.Errorf("stats %+v: the first request was not cut short", st)
	}
}
