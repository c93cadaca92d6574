package serve_test

import (
	"context"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
)

// TestRemoteMatchesLocalOnGrpoServe: episodes played on grpo serve through
// the endpoints client have exactly the prompt tokens, tokens, log-probs
// and rewards of the same episodes played in process: same template, same
// stop tokens, and the server seeds each sequence with the seed sent.
func TestRemoteMatchesLocalOnGrpoServe(t *testing.T) {
	ts := startTinyServer(t, 4, 128)
	m, tok, e, exs := ts.m, ts.tok, ts.env, ts.exs

	p := sampler.DefaultParams()
	p.MaxTokens = 12
	local, err := rollout.LocalEngine{Model: m, Tok: tok}.Play(context.Background(), e, exs, 2, p, 5, rollout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := endpoints.New([]endpoints.Endpoint{{ID: "srv", Model: "tiny", URL: ts.url + "/v1"}}, endpoints.Options{})
	if err != nil {
		t.Fatal(err)
	}
	remote, err := rollout.RemoteEngine{Gen: rollout.EndpointGenerator(c, rollout.EndpointOptions{TokenIDs: true})}.Play(context.Background(), e, exs, 2, p, 5, rollout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range local {
		l, r := local[i], remote[i]
		if !slices.Equal(l.PromptTokens, r.PromptTokens) || !slices.Equal(l.Tokens, r.Tokens) || !slices.Equal(l.Logprobs, r.Logprobs) ||
			l.Reward != r.Reward || l.FinishReason != r.FinishReason || len(r.Errors) > 0 {
			t.Errorf("rollout %d differs:\nlocal  %v %v %v\nremote %v %v %v %v", i, l.Tokens, l.Reward, l.FinishReason, r.Tokens, r.Reward, r.FinishReason, r.Errors)
		}
	}
}
