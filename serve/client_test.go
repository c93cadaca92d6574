package serve

import (
	"context"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/endpoints"
)

// TestEndpointsClientAgainstServe: grpo's own client, as a trainer will
// use it, gets from grpo serve the token ids and log-probs the sampler
// gives under the same uint64 seed, by chat and by token-in completion.
func TestEndpointsClientAgainstServe(t *testing.T) {
	f := newFixture(t, Config{Slots: 2})
	c, err := endpoints.New([]endpoints.Endpoint{{ID: "local", Model: "tiny", URL: f.url + "/v1", Type: endpoints.TypeChat}}, endpoints.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seed, maxTokens, temp := uint64(1<<63+12345), 10, 1.0
	resp, err := c.Chat(context.Background(), &endpoints.ChatRequest{Messages: []chat.Message{{Role: "user", Content: "hi"}},
		Seed: (*endpoints.Seed)(&seed), MaxTokens: &maxTokens, Temperature: &temp, Logprobs: true, ReturnTokenIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	want := direct(t, f, resp.PromptTokenIDs, params(1, seed, maxTokens))
	ch := resp.Choices[0]
	if !slices.Equal(ch.TokenIDs, want.Tokens) {
		t.Fatalf("chat token ids %v, sampler %v", ch.TokenIDs, want.Tokens)
	}
	for k, e := range ch.Logprobs.Content {
		if float32(e.Logprob) != want.Logprobs[k] {
			t.Errorf("token %d: log-prob %v, sampler %v", k, e.Logprob, want.Logprobs[k])
		}
	}
	cr, err := c.Completion(context.Background(), &endpoints.CompletionRequest{Prompt: resp.PromptTokenIDs, Seed: (*endpoints.Seed)(&seed),
		MaxTokens: &maxTokens, Temperature: &temp, ReturnTokenIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cr.Choices[0].TokenIDs, want.Tokens) {
		t.Errorf("completion token ids %v, sampler %v", cr.Choices[0].TokenIDs, want.Tokens)
	}
}
