package serve_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/sampler"
)

// againEnv is a multi-turn environment that goes on until its turn limit
// or the sequence's room runs out: each reply asks for another answer.
type againEnv struct{}

func (againEnv) ID() string                             { return "again" }
func (againEnv) Examples(string) ([]env.Example, error) { return nil, nil }
func (againEnv) NewEpisode(env.Example) env.Episode     { return &againEpisode{} }
func (againEnv) Rubric() *rubric.Rubric                 { return lengthRubric }
func (againEnv) MaxTurns() int                          { return 20 }

type againEpisode struct{ n int }

func (e *againEpisode) Respond(_ context.Context, text string) ([]chat.Message, bool, error) {
	e.n++
	return []chat.Message{{Role: "user", Content: fmt.Sprintf("Turn %d had %d characters; once more, please.", e.n, len(text))}}, false, nil
}

// lengthRubric rewards longer conversations: a rollout's reward depends
// on every turn's text.
var lengthRubric, _ = rubric.Weighted(rubric.Term{Name: "chars", Weight: 1, Func: rubric.Reward(func(r rubric.Rollout) float64 {
	n := 0
	for _, m := range r.Completion {
		n += len(m.Content)
	}
	return float64(n%97) / 97
})})

// TestServerEngineMatchesLocal: episodes played by rollout.ServerEngine
// on grpo serve — each turn a completions request on the token ids so
// far, the server holding fewer slots than there are episodes, so its
// batches differ from Local's — equal Local's over the same adapter in
// every field: prompt and completion tokens, the model mask, log-probs,
// messages, turns, truncation by the context and rewards, for a
// single-turn and a multi-turn environment. SetPolicy loads each step's
// adapter under step-N and unloads the previous one.
func TestServerEngineMatchesLocal(t *testing.T) {
	ts := startTinyServer(t, 3, 512)
	m, tok, reverse, exs := ts.m, ts.tok, ts.env, ts.exs
	ctx := context.Background()
	c, err := endpoints.New([]endpoints.Endpoint{{ID: "srv", Model: "tiny", URL: ts.url + "/v1"}}, endpoints.Options{})
	if err != nil {
		t.Fatal(err)
	}
	adapters := filepath.Join(t.TempDir(), "adapters")
	eng, err := rollout.NewServerEngine(ctx, c, rollout.ServerOptions{Model: "tiny", AdapterDir: adapters, BaseModel: "tiny", Tok: tok, Config: m.Config})
	if err != nil {
		t.Fatal(err)
	}
	a, err := lora.New(m, lora.Config{Rank: 2, Alpha: 4, TargetModules: []string{"q_proj", "v_proj", "down_proj"}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	policy := m.WithAdapter(a)
	p := sampler.DefaultParams()
	p.MaxTokens = 16
	for step := 1; step <= 2; step++ {
		perturb(m.Backend, a, step)
		if err := eng.SetPolicy(ctx, step, a); err != nil {
			t.Fatal(err)
		}
		if got := eng.Adapter(); got != fmt.Sprintf("step-%d", step) {
			t.Fatalf("step %d: requests use model %q", step, got)
		}
		for _, tc := range []struct {
			e   env.Environment
			exs []env.Example
		}{{reverse, exs}, {againEnv{}, exs[:2]}} {
			seed := uint64(40 + step)
			local, err := rollout.LocalEngine{Model: policy, Tok: tok}.Play(ctx, tc.e, tc.exs, 3, p, seed, rollout.Options{})
			if err != nil {
				t.Fatal(err)
			}
			remote, err := eng.Play(ctx, tc.e, tc.exs, 3, p, seed, rollout.Options{})
			if err != nil {
				t.Fatal(err)
			}
			compareTrajectories(t, fmt.Sprintf("step %d, env %s", step, tc.e.ID()), local, remote)
			if tc.e.ID() == "again" {
				for i, l := range local {
					if l.TruncatedBy != rollout.TruncatedContext || l.Turns < 2 {
						t.Errorf("step %d: multi-turn rollout %d ended after %d turns, truncated by %q; want several turns up to the context", step, i, l.Turns, l.TruncatedBy)
					}
				}
			}
		}
	}
	if _, err := os.Stat(filepath.Join(adapters, "step-1")); !os.IsNotExist(err) {
		t.Errorf("step-1's adapter directory is still there after step 2 (%v)", err)
	}
	names := servedModels(t, c)
	if slices.Contains(names, "step-1") || !slices.Contains(names, "step-2") {
		t.Errorf("after step 2 the server serves %v; want step-2 and not step-1", names)
	}
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if names := servedModels(t, c); slices.Contains(names, "step-2") {
		t.Errorf("after Close the server serves %v", names)
	}
}

// perturb sets every LoRA matrix to a step-dependent pattern, so the
// adapter changes what the model samples and each step's differs.
func perturb(be kernels.Backend, a *lora.Adapter, step int) {
	for k, p := range a.Params() {
		v := make([]float32, p.Value.Len())
		for i := range v {
			v[i] = float32((i*7+k*3+step)%11-5) * 0.04
		}
		be.Upload(p.Value, v)
	}
}

func compareTrajectories(t *testing.T, what string, local, remote []rollout.Trajectory) {
	t.Helper()
	if len(local) != len(remote) {
		t.Fatalf("%s: %d local trajectories, %d remote", what, len(local), len(remote))
	}
	for i := range local {
		l, r := local[i], remote[i]
		if !slices.Equal(l.PromptTokens, r.PromptTokens) || !slices.Equal(l.Tokens, r.Tokens) || !slices.Equal(l.ModelMask, r.ModelMask) ||
			logprobGap(l.Logprobs, r.Logprobs) > 1e-5 || !reflect.DeepEqual(l.Messages, r.Messages) || l.Turns != r.Turns ||
			l.Truncated != r.Truncated || l.TruncatedBy != r.TruncatedBy || l.FinishReason != r.FinishReason ||
			l.Reward != r.Reward || len(l.Errors)+len(r.Errors) > 0 {
			t.Errorf("%s: rollout %d differs (log-probs by %g):\nlocal  %d turns %v %q %v %v %v\nremote %d turns %v %q %v %v %v", what, i, logprobGap(l.Logprobs, r.Logprobs),
				l.Turns, l.Tokens, l.TruncatedBy, l.Reward, l.FinishReason, l.Errors, r.Turns, r.Tokens, r.TruncatedBy, r.Reward, r.FinishReason, r.Errors)
		}
	}
}

// logprobGap is the largest difference between two log-prob lists (+Inf
// when their lengths differ). A turn after the first is prefilled whole by
// the server but continued from the cache by Local, so the sums run in
// another order and the last bits may differ; the tokens may not.
func logprobGap(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	gap := 0.0
	for i := range a {
		gap = max(gap, math.Abs(float64(a[i]-b[i])))
	}
	return gap
}

func servedModels(t *testing.T, c *endpoints.Client) []string {
	t.Helper()
	err := c.CheckServes(context.Background(), "\x00none")
	_, list, _ := strings.Cut(fmt.Sprint(err), "it serves ")
	return strings.Split(strings.TrimSuffix(list, ")"), ", ")
}
