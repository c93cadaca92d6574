package env

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// Trajectory is one played and scored episode, kept as the exact tokens
// the model saw: PromptTokens, then Tokens — the model's turns as sampled
// and, between them, the environment's replies as the chat template
// renders them. It maps field for field onto trainer.Sample (Prompt,
// Completion, ModelMask, OldLogp, Truncated).
type Trajectory struct {
	Example
	PromptTokens []int32
	// Tokens is everything after the prompt.
	Tokens []int32
	// ModelMask[i] is true where Tokens[i] was sampled by the model and
	// false where the environment's reply put it.
	ModelMask []bool
	// Logprobs[i] is the sampler's log-prob of Tokens[i] under the model's
	// raw distribution (see package sampler); 0 on environment tokens.
	Logprobs []float32
	// Messages is the completion as chat messages, for the rubric: each
	// assistant turn's decoded text (without its stop token) and the
	// environment's replies, in order.
	Messages []chat.Message
	// Turns counts the model's turns.
	Turns int
	// Truncated is true when a length limit ended the episode: the last
	// turn hit max_tokens or the cache length, or the environment's reply
	// did not fit.
	Truncated bool
	// FinishReason is the last turn's: "stop" or "length".
	FinishReason string
	// Reward is the rubric's reward in [0, 1]; 0 for an episode that failed.
	Reward float64
	// Metrics are the rubric's metrics, plus "errors/episode" = 1 for an
	// episode that failed.
	Metrics map[string]float64
	// Errors holds one line per problem: the episode's (then the episode
	// ended and scored 0) and the rubric's failed terms.
	Errors []string
}

// RolloutOptions tune Rollouts. The zero value is usable.
type RolloutOptions struct {
	// MaxTurns caps the model's turns per episode; 0 means no cap besides
	// the episode ending and the sampler's cache length.
	MaxTurns int
	// EnableThinking sets Qwen3's enable_thinking template variable; nil
	// leaves it undefined (thinking on).
	EnableThinking *bool
	// ScoreWorkers bounds concurrent rubric calls; 0 means 8.
	ScoreWorkers int
	// Timing, when not nil, accumulates the time spent playing and scoring.
	Timing *RolloutTiming
}

// Rollouts plays perExample episodes of each example with s and scores
// them with e's rubric. Each prompt is rendered with tok's chat template
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
// and reward 0; the others go on. Rollouts itself fails only on bad
// arguments, ctx cancellation, or a failing forward pass.
func Rollouts(ctx context.Context, s *sampler.Sampler, tok *tokenizer.Tokenizer, e Environment, examples []Example, perExample int, params sampler.Params, seed uint64, opts RolloutOptions) ([]Trajectory, error) {
	switch {
	case s == nil || tok == nil || e == nil:
		return nil, errors.New("rollouts: sampler, tokenizer and environment are required")
	case perExample < 1:
		return nil, fmt.Errorf("rollouts: rollouts_per_example = %d: want at least 1", perExample)
	case opts.MaxTurns < 0:
		return nil, fmt.Errorf("rollouts: max_turns = %d: want a positive count, or 0 for no cap", opts.MaxTurns)
	case e.Rubric() == nil:
		return nil, fmt.Errorf("rollouts: environment %q has no rubric", e.ID())
	}
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
		prompt, err := d.renderPrompt(ex.Prompt)
		for j := range perExample {
			t := &trajs[i*perExample+j]
			t.Example = ex
			t.PromptTokens = prompt
			if err != nil {
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

// RolloutTiming accumulates where Rollouts spent its time: playing the
// episodes (generation and the environment's replies) and scoring them.
type RolloutTiming struct {
	Play, Score time.Duration
}

// driver holds what every episode of one Rollouts call shares.
type driver struct {
	s    *sampler.Sampler
	tok  *tokenizer.Tokenizer
	opts RolloutOptions
	chat tokenizer.ChatOptions
}

// episode is one trajectory being played.
type episode struct {
	t      *Trajectory
	params sampler.Params
	ep     Episode
	seq    *sampler.Seq
	conv   []chat.Message // prompt and completion so far
}

func (d *driver) renderPrompt(prompt []chat.Message) ([]int32, error) {
	opts := d.chat
	opts.AddGenerationPrompt = true
	text, err := d.tok.ApplyChatTemplate(prompt, opts)
	if err != nil {
		return nil, err
	}
	return d.tok.Encode(text), nil
}

// play runs the episodes, keeping the sampler's free slots filled from
// the queue; each Run plays one turn of every active episode.
func (d *driver) play(ctx context.Context, e Environment, queue []*episode) error {
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
	}
	return nil
}

// afterTurn records the turn the sampler just played, asks the episode
// for its reply and appends it; it reports whether the episode goes on.
func (d *driver) afterTurn(ctx context.Context, p *episode) bool {
	t, turn := p.t, &p.seq.Turn
	t.Turns++
	t.FinishReason = turn.FinishReason
	t.Truncated = turn.FinishReason == sampler.FinishLength
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
		t.Truncated = true
		return false
	}
	if err := p.seq.Append(ids...); err != nil {
		t.fail(fmt.Sprintf("turn %d: %v", t.Turns, err))
		return false
	}
	t.Truncated = false
	t.Tokens = append(t.Tokens, ids...)
	for range ids {
		t.ModelMask = append(t.ModelMask, false)
		t.Logprobs = append(t.Logprobs, 0)
	}
	t.Messages = append(t.Messages, reply...)
	p.conv = append(p.conv, reply...)
	return true
}

// respondSafely calls Respond, turning a panic into an error so one
// faulty episode cannot end the run.
func respondSafely(ctx context.Context, ep Episode, text string) (reply []chat.Message, done bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v (at %s)", r, panicLine(debug.Stack()))
		}
	}()
	return ep.Respond(ctx, text)
}

// panicLine picks the first frame outside the runtime and this file from a
// stack trace, to say where a panic came from in one line.
func panicLine(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for i := 0; i+1 < len(lines); i++ {
		f := strings.TrimSpace(lines[i+1])
		if strings.HasPrefix(lines[i], "panic(") || strings.Contains(f, "/runtime/") || strings.Contains(f, "env/rollout.go") || !strings.Contains(f, ".go:") {
			continue
		}
		if j := strings.LastIndex(f, " +0x"); j > 0 {
			f = f[:j]
		}
		return f
	}
	return "unknown location"
}

// fail ends the trajectory with an error: reward 0.
func (t *Trajectory) fail(msg string) {
	t.Errors = append(t.Errors, msg)
}

// score runs the rubric over every trajectory that did not fail.
func score(ctx context.Context, rb *rubric.Rubric, trajs []Trajectory, workers int) {
	if workers <= 0 {
		workers = 8
	}
	var idx []int
	var rs []rubric.Rollout
	for i := range trajs {
		t := &trajs[i]
		if len(t.Errors) > 0 {
			t.Reward = 0
			t.Metrics = map[string]float64{"errors/episode": 1}
			continue
		}
		idx = append(idx, i)
		rs = append(rs, rubric.Rollout{Prompt: t.Prompt, Completion: t.Messages, Answer: t.Answer, Info: t.Info})
	}
	for k, res := range rb.ScoreAll(ctx, rs, workers) {
		t := &trajs[idx[k]]
		t.Reward = res.Reward
		t.Metrics = res.Metrics
		for _, e := range res.Errors {
			t.Errors = append(t.Errors, "rubric: "+e)
		}
	}
}

// RenderPrompt returns the tokens Rollouts starts an episode with: the
// prompt messages through tok's chat template with the generation prompt.
func RenderPrompt(tok *tokenizer.Tokenizer, prompt []chat.Message, enableThinking *bool) ([]int32, error) {
	d := &driver{tok: tok, chat: tokenizer.ChatOptions{EnableThinking: enableThinking}}
	return d.renderPrompt(prompt)
}

// TurnLimiter is implemented by multi-turn environments that know the most
// model turns an episode can take; callers size KV caches with it.
// Environments without it are treated as single-turn for sizing (a longer
// episode is cut off as truncated when its cache slot fills).
type TurnLimiter interface {
	MaxTurns() int
}
