package eval

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// liveEnv counts the episodes in flight (started, not yet answered), which
// is what one pass holds in the sampler's KV cache.
type liveEnv struct {
	env.Environment
	mu         sync.Mutex
	live, most int
}

func (l *liveEnv) NewEpisode(ex env.Example) env.Episode {
	l.mu.Lock()
	l.live++
	l.most = max(l.most, l.live)
	l.mu.Unlock()
	return &liveEpisode{Episode: l.Environment.NewEpisode(ex), l: l}
}

type liveEpisode struct {
	env.Episode
	l *liveEnv
}

func (e *liveEpisode) Respond(ctx context.Context, s string) ([]chat.Message, bool, error) {
	reply, done, err := e.Episode.Respond(ctx, s)
	if done || err != nil {
		e.l.mu.Lock()
		e.l.live--
		e.l.mu.Unlock()
	}
	return reply, done, err
}

// TestEvalSplitsAnExamplesRollouts: with more rollouts per example (20)
// than --batch (8), no pass holds more than 8 rollouts, and every example
// still gets its 20, in order, with pass@k over all of them.
func TestEvalSplitsAnExamplesRollouts(t *testing.T) {
	m, tok, inner := tinyReverseEval(t, 4)
	e := &liveEnv{Environment: inner}
	p := sampler.DefaultParams()
	p.MaxTokens = 3
	res, err := runKept(m, tok, e, "rev", Options{NumExamples: 2, RolloutsPerExample: 20, Sampling: p, PassThreshold: 0.01, Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	if e.most > 8 || e.most == 0 {
		t.Errorf("a pass held %d rollouts at once; --batch is 8", e.most)
	}
	if res.Examples != 2 || res.Rollouts != 40 || len(res.Trajectories) != 40 {
		t.Fatalf("%d examples, %d rollouts, %d trajectories; want 2, 40, 40", res.Examples, res.Rollouts, len(res.Trajectories))
	}
	rows := res.Rows()
	solved := [2]int{}
	for i, r := range rows {
		if r.ExampleIndex != i/20 || r.Rollout != i%20 {
			t.Fatalf("row %d is example %d rollout %d", i, r.ExampleIndex, r.Rollout)
		}
		if r.Reward >= 0.01 {
			solved[i/20]++
		}
	}
	want1 := (float64(solved[0])/20 + float64(solved[1])/20) / 2
	if d := res.PassAt1 - want1; d > 1e-12 || d < -1e-12 {
		t.Errorf("pass@1 %v, want %v from the rows", res.PassAt1, want1)
	}
}

// runKept is Run on a KeptEngine of its own, as grpo eval plays a model
// loaded here: one sampler for every pass.
func runKept(m *model.Model, tok *tokenizer.Tokenizer, e env.Environment, name string, o Options) (Result, error) {
	eng := rollout.NewKeptEngine(m, tok)
	defer eng.Close(context.Background())
	return Run(context.Background(), eng, e, name, o)
}

// tinyReverseEval loads the tiny Qwen3 model on the CPU backend with a
// reverse-text custom environment of n examples, for the eval tests.
func tinyReverseEval(t *testing.T, n int) (*model.Model, *tokenizer.Tokenizer, env.Environment) {
	t.Helper()
	dir := t.TempDir()
	if err := tinymodel.Write(filepath.Join(dir, "model"), filepath.Join("..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	if err := tinymodel.WriteReverseEnv(filepath.Join(dir, "env"), n); err != nil {
		t.Fatal(err)
	}
	be, err := kernels.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(filepath.Join(dir, "model"), be)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(filepath.Join(dir, "model"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := env.New(filepath.Join(dir, "env"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, tok, e
}
