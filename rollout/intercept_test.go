package rollout

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

func TestDecodeAgentRequest(t *testing.T) {
	c, model, err := decodeAgentRequest([]byte(`{"model":"m","messages":[
		{"role":"system","content":"s"},
		{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
		{"role":"assistant","content":null,"reasoning_content":"r"}],"temperature":0.2,
		"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	msgs := c.messages
	if model != "m" || len(msgs) != 3 || len(c.tools) != 1 || msgs[1].Content != "ab" || msgs[2].Content != "" || *msgs[2].ReasoningContent != "r" {
		t.Fatalf("decoded %q %+v", model, msgs)
	}
	for body, want := range map[string]string{
		`{"messages":[{"role":"user","content":"x"}],"stream":true}`:                 "stream",
		`{"messages":[{"role":"user","content":"x"}],"n":2}`:                         "n = 2",
		`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`: "tools[0]",
		`{"messages":[]}`:                "empty",
		`{"messages":[{"content":"x"}]}`: "no role",
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`: "image_url",
		`not json`: "not a chat completion",
	} {
		if _, _, err := decodeAgentRequest([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %q", body, err, want)
		}
	}
}

// TestInterceptorRoundTrip: a call to an episode's path reaches its link
// and gets the answer back as a chat completion; calls to an unknown
// path, or after the episode ended, get OpenAI-shaped errors.
func TestInterceptorRoundTrip(t *testing.T) {
	ic, err := newInterceptor()
	if err != nil {
		t.Fatal(err)
	}
	defer ic.close()
	base, link := ic.open()
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("base URL %s is not local", base)
	}
	go func() {
		c := <-link.calls
		if len(c.messages) != 1 || c.messages[0].Role != "user" || c.messages[0].Content != "hi" {
			c.answer <- agentAnswer{err: errors.New("unexpected call")}
			return
		}
		c.answer <- agentAnswer{content: "hello", finish: "stop", promptTokens: 7, completion: 2}
	}()
	var got struct {
		Choices []struct {
			Message      chat.Message `json:"message"`
			FinishReason string       `json:"finish_reason"`
		} `json:"choices"`
		Usage struct{ TotalTokens int } `json:"usage"`
	}
	status := post(t, base+"/chat/completions", `{"model":"x","messages":[{"role":"user","content":"hi"}]}`, &got)
	if status != 200 || len(got.Choices) != 1 || got.Choices[0].Message.Content != "hello" || got.Choices[0].FinishReason != "stop" {
		t.Fatalf("status %d, response %+v", status, got)
	}
	var e struct{ Error struct{ Message string } }
	if status := post(t, base[:strings.Index(base, "/e/")]+"/e/1/v1/chat/completions", `{}`, &e); status != 404 || !strings.Contains(e.Error.Message, "OPENAI_BASE_URL") {
		t.Errorf("unknown episode: status %d, %q", status, e.Error.Message)
	}
	link.end()
	if status := post(t, base+"/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, &e); status != 409 || !strings.Contains(e.Error.Message, "episode is over") {
		t.Errorf("after the episode: status %d, %q", status, e.Error.Message)
	}
	resp, err := http.Get(base + "/models")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("GET models: %v %v", resp, err)
	}
}

func post(t *testing.T, url, body string, v any) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}
