package rollout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/sampler"
)

// Generator produces one assistant turn for a conversation on an
// inference server (EndpointGenerator is the OpenAI-API one).
type Generator interface {
	Generate(ctx context.Context, conv []chat.Message, p sampler.Params) (Generation, error)
}

// Generation is one generated turn.
type Generation struct {
	Content      string
	FinishReason string
	// PromptTokens, Tokens and Logprobs are the server's token ids and raw
	// log-probs when it returns them (vLLM and grpo serve with
	// return_token_ids and logprobs); nil from a hosted API.
	PromptTokens []int32
	Tokens       []int32
	Logprobs     []float32
}

// FatalError marks a generation error that will fail every request alike
// (a bad key, an unknown model): RemoteEngine stops instead of failing
// each episode with it.
type FatalError struct{ Err error }

func (e *FatalError) Error() string { return e.Err.Error() }
func (e *FatalError) Unwrap() error { return e.Err }

// RemoteEngine plays episodes through a Generator: each model turn sends
// the conversation so far as chat messages (the server applies the chat
// template), and the environment's replies are appended as messages.
// Trajectories carry token ids and log-probs only when the server returns
// them; environment replies have no tokens then.
//
// Seeds: rollout j of example i sends sampler.DeriveSeed(seed, i, j) as
// its first turn's seed, as Local seeds that sequence, and later turns
// DeriveSeed of that and the turn index (a server cannot continue one
// random stream across requests).
type RemoteEngine struct {
	Gen Generator
	// Concurrency bounds the episodes in flight; 0 means 32.
	Concurrency int
}

// Play plays and scores the episodes.
func (r RemoteEngine) Play(ctx context.Context, e env.Environment, exs []env.Example, perExample int, p sampler.Params, seed uint64, opts Options) ([]Trajectory, error) {
	switch {
	case r.Gen == nil || e == nil:
		return nil, errors.New("rollouts: generator and environment are required")
	case perExample < 1:
		return nil, fmt.Errorf("rollouts: rollouts_per_example = %d: want at least 1", perExample)
	case opts.MaxTurns < 0:
		return nil, fmt.Errorf("rollouts: max_turns = %d: want a positive count, or 0 for no cap", opts.MaxTurns)
	case e.Rubric() == nil:
		return nil, fmt.Errorf("rollouts: environment %q has no rubric", e.ID())
	}
	if _, ok := e.(env.AgentProgram); ok {
		return nil, fmt.Errorf("rollouts: environment %q is played by an agent program, which the interception endpoint serves from a model in this process or a grpo serve/vLLM server, not from a hosted chat API; evaluate it with a local model or a server", e.ID())
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("rollouts: [sampling] %v", err)
	}
	workers := r.Concurrency
	if workers <= 0 {
		workers = 32
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	trajs := make([]Trajectory, len(exs)*perExample)
	var mu sync.Mutex
	var fatal error
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, ex := range exs {
		for j := range perExample {
			t := &trajs[i*perExample+j]
			t.Example = ex
			ps := p
			ps.Seed = sampler.DeriveSeed(seed, uint64(opts.FirstExample+i), uint64(j))
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if err := r.episode(ctx, e, t, ps, opts); err != nil {
					mu.Lock()
					if fatal == nil {
						fatal = err
					}
					mu.Unlock()
					cancel()
				}
			}()
		}
	}
	wg.Wait()
	if fatal != nil {
		return nil, fmt.Errorf("rollouts: %w", fatal)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t1 := time.Now()
	score(ctx, e.Rubric(), trajs, opts.ScoreWorkers)
	if opts.Timing != nil {
		opts.Timing.Play += t1.Sub(t0)
		opts.Timing.Score += time.Since(t1)
	}
	return trajs, nil
}

// episode plays one episode into t; it returns an error only when the
// whole Play must stop (a FatalError, an environment marked env.ErrFatal).
func (r RemoteEngine) episode(ctx context.Context, e env.Environment, t *Trajectory, p sampler.Params, opts Options) error {
	ep := e.NewEpisode(t.Example)
	conv := append([]chat.Message(nil), t.Prompt...)
	for turn := 0; ; turn++ {
		tp := p
		if turn > 0 {
			tp.Seed = sampler.DeriveSeed(p.Seed, uint64(turn))
		}
		g, err := r.Gen.Generate(ctx, conv, tp)
		if err != nil {
			var fe *FatalError
			if errors.As(err, &fe) {
				return err
			}
			if ctx.Err() == nil {
				t.fail(fmt.Sprintf("turn %d: generate: %v", turn+1, err))
				t.FailedGenerating = true
			}
			return nil
		}
		t.Turns++
		if turn == 0 {
			t.PromptTokens = g.PromptTokens
		}
		t.Tokens = append(t.Tokens, g.Tokens...)
		t.Logprobs = append(t.Logprobs, g.Logprobs...)
		for range g.Tokens {
			t.ModelMask = append(t.ModelMask, true)
		}
		t.FinishReason = g.FinishReason
		t.Truncated, t.TruncatedBy = g.FinishReason == sampler.FinishLength, ""
		if t.Truncated {
			t.TruncatedBy = TruncatedMaxTokens
		}
		msg := chat.Message{Role: "assistant", Content: g.Content}
		t.Messages = append(t.Messages, msg)
		conv = append(conv, msg)
		reply, done, err := respondSafely(ctx, ep, g.Content)
		switch {
		case err != nil:
			t.fail(fmt.Sprintf("turn %d: respond: %v", t.Turns, err))
			if errors.Is(err, env.ErrFatal) {
				return err
			}
			return nil
		case done || opts.MaxTurns > 0 && t.Turns >= opts.MaxTurns:
			return nil
		case len(reply) == 0:
			t.fail(fmt.Sprintf("turn %d: respond returned no reply and did not end the episode", t.Turns))
			return nil
		}
		// The episode goes on, so a turn cut by max_tokens does not
		// truncate it.
		t.Truncated, t.TruncatedBy = false, ""
		t.Messages = append(t.Messages, reply...)
		conv = append(conv, reply...)
	}
}
