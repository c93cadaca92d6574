package rollout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// Options tune Play and Local. The zero value is usable.
type Options struct {
	// MaxTurns caps the model's turns per episode; 0 means no cap besides
	// the episode ending and the sampler's cache length.
	MaxTurns int
	// EnableThinking sets Qwen3's enable_thinking template variable; nil
	// leaves it undefined (thinking on).
	EnableThinking *bool
	// ScoreWorkers bounds concurrent rubric calls; 0 means 8.
	ScoreWorkers int
	// Timing, when not nil, accumulates the time spent playing and scoring.
	Timing *Timing
}

// Timing accumulates where Play spent its time: playing the episodes
// (generation and the environment's replies) and scoring them.
type Timing struct {
	Play, Score time.Duration
}

// Play plays perExample episodes of each example with s and scores them
// with e's rubric. Each prompt is rendered once with tok's chat template
// (add_generation_prompt). All episodes share the sampler's batch: when
// the cache has fewer slots than episodes, new episodes start as others
// finish. After each model turn the episode's Respond is called; its reply
// is appended as tokens (see replyText) and generation continues in the
// same cache slot, until the episode is done, MaxTurns is reached, the
// cache slot is full, or something fails.
//
// params is the sampling for every episode; its Seed is replaced by one
// derived from seed, the example's index and the rollout's index, so a
// run is reproducible. Empty StopTokens means sampler.StopTokenIDs(tok).
// MaxTokens caps each turn.
//
// Trajectories come back in order: example i's rollout j at
// i*perExample+j. A failing episode (a prompt too long for the cache, a
// Respond error or panic, a template error) ends with its error recorded
// and reward 0; the others go on. Play itself fails only on bad
// arguments, ctx cancellation, or a failing forward pass.
func Play(ctx context.Context, s *sampler.Sampler, tok *tokenizer.Tokenizer, e env.Environment, examples []env.Example, perExample int, params sampler.Params, seed uint64, opts Options) ([]Trajectory, error) {
	if err := checkArgs(s, tok, e, perExample, opts); err != nil {
		return nil, err
	}
	prompts := renderPrompts(tok, examples, tokenizer.ChatOptions{EnableThinking: opts.EnableThinking})
	return play(ctx, s, tok, e, examples, prompts, perExample, params, seed, opts)
}

func checkArgs(s *sampler.Sampler, tok *tokenizer.Tokenizer, e env.Environment, perExample int, opts Options) error {
	switch {
	case s == nil || tok == nil || e == nil:
		return errors.New("rollouts: sampler, tokenizer and environment are required")
	case perExample < 1:
		return fmt.Errorf("rollouts: rollouts_per_example = %d: want at least 1", perExample)
	case opts.MaxTurns < 0:
		return fmt.Errorf("rollouts: max_turns = %d: want a positive count, or 0 for no cap", opts.MaxTurns)
	case e.Rubric() == nil:
		return fmt.Errorf("rollouts: environment %q has no rubric", e.ID())
	}
	return nil
}

// play is Play after checkArgs, with each example's prompt rendered.
func play(ctx context.Context, s *sampler.Sampler, tok *tokenizer.Tokenizer, e env.Environment, examples []env.Example, prompts []prompt, perExample int, params sampler.Params, seed uint64, opts Options) ([]Trajectory, error) {
	if err := params.Validate(); err != nil {
		return nil, fmt.Errorf("rollouts: [sampling] %v", err)
	}
	if len(params.StopTokens) == 0 {
		params.StopTokens = sampler.StopTokenIDs(tok)
	}
	d := &driver{s: s, tok: tok, opts: opts, chat: tokenizer.ChatOptions{EnableThinking: opts.EnableThinking}}
	trajs := make([]Trajectory, len(examples)*perExample)
	var queue []*episode
	for i, ex := range examples {
		for j := range perExample {
			t := &trajs[i*perExample+j]
			t.Example = ex
			t.PromptTokens = prompts[i].ids
			if err := prompts[i].err; err != nil {
				t.fail(fmt.Sprintf("prompt: %v", err))
				continue
			}
			p := params
			p.Seed = sampler.DeriveSeed(seed, uint64(i), uint64(j))
			queue = append(queue, &episode{t: t, params: p})
		}
	}
	t0 := time.Now()
	if err := d.play(ctx, e, queue); err != nil {
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

// driver holds what every episode of one Play call shares.
type driver struct {
	s    *sampler.Sampler
	tok  *tokenizer.Tokenizer
	opts Options
	chat tokenizer.ChatOptions
	// fatal is the first Respond error wrapping env.ErrFatal: the
	// environment is down, so Play stops rather than fail every episode.
	fatal error
}

// episode is one trajectory being played.
type episode struct {
	t      *Trajectory
	params sampler.Params
	ep     env.Episode
	seq    *sampler.Seq
	conv   []chat.Message // prompt and completion so far
}

// play runs the episodes, keeping the sampler's free slots filled from
// the queue; each Run plays one turn of every active episode.
func (d *driver) play(ctx context.Context, e env.Environment, queue []*episode) error {
	var active []*episode
	defer func() {
		for _, p := range active {
			d.s.Release(p.seq)
		}
	}()
	for len(queue) > 0 || len(active) > 0 {
		for len(queue) > 0 && d.s.FreeSlots() > 0 {
			p := queue[0]
			queue = queue[1:]
			seq, err := d.s.Start(p.t.PromptTokens, p.params)
			if err != nil {
				p.t.fail(fmt.Sprintf("start: %v", err))
				continue
			}
			p.seq = seq
			p.ep = e.NewEpisode(p.t.Example)
			p.conv = append([]chat.Message(nil), p.t.Prompt...)
			active = append(active, p)
		}
		if len(active) == 0 {
			if len(queue) > 0 {
				return fmt.Errorf("rollouts: the sampler has no free cache slot; release the sequences holding them")
			}
			break
		}
		seqs := make([]*sampler.Seq, len(active))
		for i, p := range active {
			seqs[i] = p.seq
		}
		if err := d.s.Run(ctx, seqs); err != nil {
			return fmt.Errorf("rollouts: %w", err)
		}
		next := active[:0]
		for _, p := range active {
			if d.afterTurn(ctx, p) {
				next = append(next, p)
			} else {
				d.s.Release(p.seq)
			}
		}
		active = next
		if d.fatal != nil {
			return fmt.Errorf("rollouts: %w", d.fatal)
		}
	}
	return nil
}

// afterTurn records the turn the sampler just played, asks the episode
// for its reply and appends it; it reports whether the episode goes on.
func (d *driver) afterTurn(ctx context.Context, p *episode) bool {
	t, turn := p.t, &p.seq.Turn
	t.Turns++
	t.FinishReason = turn.FinishReason
	t.Truncated, t.TruncatedBy = false, ""
	switch {
	case turn.CacheFull:
		t.Truncated, t.TruncatedBy = true, TruncatedContext
	case turn.FinishReason == sampler.FinishLength:
		t.Truncated, t.TruncatedBy = true, TruncatedMaxTokens
	}
	t.Tokens = append(t.Tokens, turn.Tokens...)
	t.Logprobs = append(t.Logprobs, turn.Logprobs...)
	for range turn.Tokens {
		t.ModelMask = append(t.ModelMask, true)
	}
	content, stopText := turn.Tokens, ""
	if turn.StopToken {
		last := content[len(content)-1]
		content = content[:len(content)-1]
		stopText, _ = d.tok.Token(last)
	}
	msg := chat.Message{Role: "assistant", Content: d.tok.Decode(content)}
	t.Messages = append(t.Messages, msg)
	p.conv = append(p.conv, msg)

	reply, done, err := respondSafely(ctx, p.ep, msg.Content)
	switch {
	case err != nil:
		t.fail(fmt.Sprintf("turn %d: respond: %v", t.Turns, err))
		if errors.Is(err, env.ErrFatal) && d.fatal == nil {
			d.fatal = err
		}
		return false
	case done || turn.CacheFull || d.opts.MaxTurns > 0 && t.Turns >= d.opts.MaxTurns:
		return false
	case len(reply) == 0:
		t.fail(fmt.Sprintf("turn %d: respond returned no reply and did not end the episode", t.Turns))
		return false
	}
	text, err := replyText(d.tok.ApplyChatTemplate, p.conv, reply, stopText, d.chat)
	if err != nil {
		t.fail(fmt.Sprintf("turn %d: rendering the reply: %v", t.Turns, err))
		return false
	}
	ids := d.tok.Encode(text)
	if len(ids) >= p.seq.Room() {
		// The reply, plus at least one token of answer, does not fit.
		t.Truncated, t.TruncatedBy = true, TruncatedContext
		return false
	}
	if err := p.seq.Append(ids...); err != nil {
		t.fail(fmt.Sprintf("turn %d: %v", t.Turns, err))
		return false
	}
	// The episode goes on, so a turn cut by max_tokens does not truncate it.
	t.Truncated, t.TruncatedBy = false, ""
	t.Tokens = append(t.Tokens, ids...)
	for range ids {
		t.ModelMask = append(t.ModelMask, false)
		t.Logprobs = append(t.Logprobs, 0)
	}
	t.Messages = append(t.Messages, reply...)
	p.conv = append(p.conv, reply...)
	return true
}
