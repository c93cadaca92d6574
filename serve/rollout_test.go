package serve_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/serve"
	"github.com/grpo-dev/grpo/tokenizer"
)

// TestRemoteMatchesLocalOnGrpoServe: episodes played on grpo serve through
// the endpoints client have exactly the prompt tokens, tokens, log-probs
// and rewards of the same episodes played in process: same template, same
// stop tokens, and the server seeds each sequence with the seed sent.
func TestRemoteMatchesLocalOnGrpoServe(t *testing.T) {
	dir := t.TempDir()
	mdir, edir := filepath.Join(dir, "model"), filepath.Join(dir, "env")
	if err := tinymodel.Write(mdir, filepath.Join("..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	if err := tinymodel.WriteReverseEnv(edir, 4); err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(mdir, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(mdir)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := env.LoadDir(edir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := spec.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	exs, err := e.Examples("eval")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(m, tok, serve.Config{ModelName: "tiny", Slots: 4, MaxLen: 128})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	hs := httptest.NewServer(srv.Handler())
	defer func() { hs.Close(); cancel(); <-done }()

	p := sampler.DefaultParams()
	p.MaxTokens = 12
	local, err := rollout.LocalEngine{Model: m, Tok: tok}.Play(context.Background(), e, exs, 2, p, 5, rollout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := endpoints.New([]endpoints.Endpoint{{ID: "srv", Model: "tiny", URL: hs.URL + "/v1"}}, endpoints.Options{})
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
