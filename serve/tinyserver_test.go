package serve_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/custom"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/serve"
	"github.com/grpo-dev/grpo/tokenizer"
)

// tinyServer is the tiny model with its tokenizer, a reverse-text
// environment of n eval examples, and grpo serve over the model on an
// httptest server that lives until the test ends.
type tinyServer struct {
	m   *model.Model
	tok *tokenizer.Tokenizer
	env env.Environment
	exs []env.Example
	url string // the server's base URL, without /v1
}

func startTinyServer(t *testing.T, n, maxLen int) tinyServer {
	t.Helper()
	dir := t.TempDir()
	mdir, edir := filepath.Join(dir, "model"), filepath.Join(dir, "env")
	if err := tinymodel.Write(mdir, filepath.Join("..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	if err := tinymodel.WriteReverseEnv(edir, n); err != nil {
		t.Fatal(err)
	}
	var ts tinyServer
	var err error
	if ts.m, err = model.Load(mdir, cpu.New()); err != nil {
		t.Fatal(err)
	}
	if ts.tok, err = tokenizer.Load(mdir); err != nil {
		t.Fatal(err)
	}
	spec, err := custom.LoadDir(edir)
	if err != nil {
		t.Fatal(err)
	}
	if ts.env, err = spec.New(nil, env.Options{}); err != nil {
		t.Fatal(err)
	}
	if ts.exs, err = ts.env.Examples("eval"); err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(ts.m, ts.tok, serve.Config{ModelName: "tiny", Slots: 4, MaxLen: maxLen})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); cancel(); <-done })
	ts.url = hs.URL
	return ts
}
