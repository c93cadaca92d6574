package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
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
	// ReasoningEffort sets gpt-oss's reasoning_effort template variable
	// ("low", "medium", "high"); "" leaves it unset.
	ReasoningEffort string
	// ScoreWorkers bounds concurrent rubric calls; 0 means 8.
	ScoreWorkers int
	// ToolWorkers bounds the episodes whose tool calls run at once (tool
	// environments only); 0 means 8.
	ToolWorkers int
	// Timing, when not nil, accumulates the time spent playing and scoring.
	Timing *Timing
	// RecordExperts keeps, for a mixture-of-experts model played
	// locally, the experts each token was routed to (Trajectory.Experts),
	// for the trainer's routing replay.
	RecordExperts bool
	// KVBlocks bounds Local's KV cache to that many blocks of
	// sampler.DefaultBlockSize tokens (estimate.KVPlan sizes it from free
	// memory); episodes beyond what it holds wait for others to finish.
	// 0 sizes the cache for every episode at once.
	KVBlocks int
	// Slots is the fewest sequences Local's sampler is sized for (0: the
	// call's episodes). Expert-parallel ranks all pass the most any
	// rank's share has, so that their samplers hold as many rows: a
	// lockstep decode step runs one bucket on every rank.
	Slots int
	// Overlap plays the episodes as two cohorts that take turns on the
	// device, so that the environment's replies to one cohort (tool calls,
	// sandboxed code, a Python environment, a judge) run while the other
	// generates (playOverlapped); OverlapPays says when that is worth
	// halving the batch. Which rollouts are generated does not depend on
	// it or on timing.
	Overlap bool
	// NoPrefixSharing makes Local prefill each episode's prompt on its own
	// instead of once per example (sampler.Config.NoPrefixSharing), for
	// comparisons.
	NoPrefixSharing bool
	// FirstExample is the place of examples[0] in the call this one is a
	// share of: data-parallel devices each play a share of a step's
	// examples, and seeds derive from an example's place in the whole
	// call, so a share draws exactly what the whole call would. 0 for a
	// call of its own.
	FirstExample int
}

// Timing accumulates where Play spent its time: playing the episodes
// (generation and the environment's replies) and then waiting for the
// scoring that had not finished by the time the last episode ended (each
// episode is scored as soon as it ends, while the others play on).
type Timing struct {
	Play, Score time.Duration
	// Generate is the part of Play spent generating turns, Respond the
	// time the environment's replies took, phase by phase (in lock step,
	// the device waited that long).
	Generate, Respond time.Duration
}

// Add adds o's durations to t's.
func (t *Timing) Add(o Timing) {
	t.Play, t.Score, t.Generate, t.Respond = t.Play+o.Play, t.Score+o.Score, t.Generate+o.Generate, t.Respond+o.Respond
}

// Play plays perExample episodes of each example with s and scores them
// with e's rubric. Each prompt is rendered once with tok's chat template
// (add_generation_prompt) and, for an example's perExample episodes
// together, prefilled once (sampler.StartGroup). All episodes share the
// sampler's batch: when the cache holds fewer episodes than there are
// (slots, or blocks for their worst case), new episodes start as others
// finish. After each model turn the episode's Respond is called; its reply
// is appended as tokens (see replyText) and generation continues in the
// same cache slot, until the episode is done, MaxTurns is reached, the
// cache slot is full, or something fails.
//
// params is the sampling for every episode; its Seed is replaced by one
// derived from seed, the example's index and the rollout's index, so a
// run is reproducible, and each later turn t of an episode draws from a
// stream seeded with sampler.DeriveSeed(that seed, t), as a server that
// plays each turn as a request of its own is seeded (ServerEngine). Empty StopTokens means sampler.StopTokenIDs(tok).
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
	st, err := newSetup(tok, e, opts)
	if err != nil {
		return nil, err
	}
	prompts := renderPrompts(tok, examples, st.chat)
	return play(ctx, runnerOf(samplerRunner{s}), tok, e, examples, prompts, perExample, params, seed, opts, st)
}

// setup is what every episode of a Play call shares besides the sampler:
// the template variables (thinking, the tools' schemas) and the tools.
type setup struct {
	chat  tokenizer.ChatOptions
	tools *toolBox
}

func newSetup(tok *tokenizer.Tokenizer, e env.Environment, opts Options) (setup, error) {
	box, err := newToolBox(tok, e)
	if err != nil {
		return setup{}, err
	}
	st := setup{chat: tokenizer.ChatOptions{EnableThinking: opts.EnableThinking, ReasoningEffort: opts.ReasoningEffort}, tools: box}
	if box != nil {
		st.chat.Tools = box.schemas
	}
	return st, nil
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

// play is Play after checkArgs, with each example's prompt rendered; run
// generates the turns.
func play(ctx context.Context, run turnRunner, tok *tokenizer.Tokenizer, e env.Environment, examples []env.Example, prompts []prompt, perExample int, params sampler.Params, seed uint64, opts Options, st setup) ([]Trajectory, error) {
	if err := params.Validate(); err != nil {
		return nil, fmt.Errorf("rollouts: [sampling] %v", err)
	}
	if len(params.StopTokens) == 0 {
		params.StopTokens = sampler.StopTokenIDs(tok)
	}
	d := &driver{run: run, tok: tok, opts: opts, chat: st.chat, tools: st.tools}
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
			p.Seed = sampler.DeriveSeed(seed, uint64(opts.FirstExample+i), uint64(j))
			queue = append(queue, &episode{t: t, params: p, example: i})
		}
	}
	if ag, ok := e.(env.AgentProgram); ok {
		ic, err := newInterceptor()
		if err != nil {
			return nil, fmt.Errorf("rollouts: %w", err)
		}
		defer ic.close()
		queue = d.startAgents(ctx, ic, ag.Agent(), queue)
		d.agents = true
		// Programs whose episode never started (no room, Play failing)
		// are killed now rather than at their deadline.
		defer abandonAgents(slices.Clone(queue))
	}
	t0 := time.Now()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.scorer = newScorer(sctx, e.Rubric(), opts.ScoreWorkers, len(trajs))
	err := endInStep(ctx, run, d.play(ctx, e, queue)) // lockstep.go
	t1 := time.Now()
	if err != nil {
		cancel() // Play fails: the scores would be thrown away
	}
	// Episodes that never started (a prompt too long, a failed start) are
	// scored now: reward 0 for their error.
	for i := range trajs {
		if !trajs[i].queued {
			d.scorer.add(&trajs[i])
		}
	}
	d.scorer.wait()
	if err != nil {
		return nil, err
	}
	if opts.Timing != nil {
		opts.Timing.Play += t1.Sub(t0)
		opts.Timing.Score += time.Since(t1)
		opts.Timing.Generate += d.runTime
		opts.Timing.Respond += d.respondTime
	}
	return trajs, nil
}

// driver holds what every episode of one Play call shares.
type driver struct {
	run   turnRunner
	tok   *tokenizer.Tokenizer
	opts  Options
	chat  tokenizer.ChatOptions
	tools *toolBox // nil for an environment without tools
	// agents: the episodes are agent programs' (env.AgentProgram).
	agents bool
	// fatal is the first Respond error wrapping env.ErrFatal: the
	// environment is down, so Play stops rather than fail every episode.
	fatal error
	// scorer scores each episode as it ends (end), while others play.
	scorer *scorer
	// runTime is the time spent generating turns, respondTime the time
	// the environment's replies took (in lock step, the device's wait).
	runTime, respondTime time.Duration
}

// episode is one trajectory being played.
type episode struct {
	t        *Trajectory
	params   sampler.Params
	example  int // index of its example: episodes of one example share a prompt
	ep       env.Episode
	seq      turnSeq
	conv     []chat.Message // prompt and completion so far
	tools    map[string]env.Tool
	agent    *agentEpisode // an agent program's episode; nil otherwise
	maxTurns int
	// the latest turn and its reply, between the phases of afterTurns
	text, stopText string
	msg            chat.Message
	reply          []chat.Message
	done           bool
	err            error
}

// begin starts p's episode; false when it fails to (recorded).
func (d *driver) begin(e env.Environment, p *episode) bool {
	p.conv = append([]chat.Message(nil), p.t.Prompt...)
	p.maxTurns = d.opts.MaxTurns
	if d.tools == nil && p.agent == nil {
		p.ep = e.NewEpisode(p.t.Example)
		return true
	}
	// A tool or agent episode ends at the environment's max_turns, as
	// verifiers' ToolEnv does: the model may keep calling otherwise.
	if tl, ok := e.(env.TurnLimiter); ok && tl.MaxTurns() > 0 && (p.maxTurns == 0 || tl.MaxTurns() < p.maxTurns) {
		p.maxTurns = tl.MaxTurns()
	}
	if p.agent != nil {
		p.ep = p.agent
		p.agent.started(p.t.PromptTokens)
		return true
	}
	p.ep = e.NewEpisode(p.t.Example)
	p.t.toolCallsBy = map[string]int{}
	tools, err := d.tools.episodeTools(p.ep)
	if err != nil {
		p.t.fail("start: " + err.Error())
		return false
	}
	p.tools = tools
	return true
}

// end releases p's cache slot and closes its episode when it holds
// resources (io.Closer), however the episode ended.
func (d *driver) end(p *episode) {
	if p.seq != nil {
		if x := p.seq.Experts(); x != nil {
			p.t.Experts = append([]int32(nil), x...)
		}
		d.run.Release(p.seq)
	}
	if c, ok := p.ep.(io.Closer); ok {
		if err := c.Close(); err != nil {
			p.t.Errors = append(p.t.Errors, "closing the episode: "+err.Error())
		}
	}
	if d.tools != nil && p.t.toolCallsBy != nil {
		p.t.ToolMetrics = d.tools.toolMetrics(p.t)
	}
	if d.scorer != nil {
		p.t.queued = true
		d.scorer.add(p.t)
	}
}

// play runs the episodes, admitting them from the queue while the
// sampler's cache holds them (admit); each Run plays one turn of every
// active episode, then the environment replies to each (respondAll)
// while the device waits. With Options.Overlap, playOverlapped hides the
// replies behind the device's work instead.
func (d *driver) play(ctx context.Context, e env.Environment, queue []*episode) error {
	if d.opts.Overlap {
		return d.playOverlapped(ctx, e, queue)
	}
	var active []*episode
	defer func() {
		for _, p := range active {
			d.end(p)
		}
	}()
	for len(queue) > 0 || len(active) > 0 {
		queue = d.admit(e, queue, len(active), nil, func(g []*episode) { active = append(active, g...) })
		if len(active) == 0 {
			if len(queue) > 0 {
				return errCacheFull
			}
			break
		}
		var err error
		if active, err = d.turn(ctx, active); err != nil {
			return err
		}
		t0 := time.Now()
		d.respondAll(ctx, active)
		d.respondTime += time.Since(t0)
		active = d.continueAll(active)
		if d.fatal != nil {
			return fmt.Errorf("rollouts: %w", d.fatal)
		}
	}
	return nil
}

var errCacheFull = errors.New("rollouts: the sampler's cache cannot hold one more episode; release the sequences holding its slots and blocks")

// turn generates one turn of each episode (the device's work), drops
// those it could not generate and records the turn of the others.
func (d *driver) turn(ctx context.Context, eps []*episode) ([]*episode, error) {
	seqs := make([]turnSeq, len(eps))
	for i, p := range eps {
		seqs[i] = p.seq
	}
	t0 := time.Now()
	err := d.run.Run(ctx, seqs)
	d.runTime += time.Since(t0)
	if err != nil {
		return eps, fmt.Errorf("rollouts: %w", err)
	}
	eps = d.dropFailed(eps)
	for _, p := range eps {
		d.recordTurn(p)
	}
	return eps, nil
}

// continueAll appends each episode's reply (continueEpisode), ends those
// that are over, and returns the others.
func (d *driver) continueAll(eps []*episode) []*episode {
	next := eps[:0]
	for _, p := range eps {
		if d.continueEpisode(p) {
			next = append(next, p)
		} else {
			d.end(p)
		}
	}
	return next
}

// admit starts episodes from the head of the queue while the sampler can
// hold them, an example's episodes together as one group (StartGroup: its
// prompt prefilled once), and hands each started group to place, while
// more (nil: always) allows; running counts the episodes already
// playing. A group waits until all of it fits, unless nothing runs: then
// as much of it as fits starts.
func (d *driver) admit(e env.Environment, queue []*episode, running int, more func() bool, place func([]*episode)) []*episode {
	for len(queue) > 0 && (more == nil || more()) {
		n := 1
		for n < len(queue) && queue[n].example == queue[0].example {
			n++
		}
		prompt := queue[0].t.PromptTokens
		k := n
		for k > 0 && !d.run.CanStart(len(prompt), k) {
			k--
		}
		if k == 0 || k < n && running > 0 {
			break
		}
		group := queue[:k]
		queue = queue[k:]
		params := make([]sampler.Params, k)
		for i, p := range group {
			params[i] = p.params
		}
		seqs, err := d.run.StartGroup(prompt, params)
		var started []*episode
		for i, p := range group {
			if err != nil {
				p.t.fail(fmt.Sprintf("start: %v", err))
				continue
			}
			p.seq = seqs[i]
			if !d.begin(e, p) {
				d.end(p)
				continue
			}
			started = append(started, p)
		}
		running += len(started)
		if len(started) > 0 {
			place(started)
		}
	}
	return queue
}

// dropFailed ends the episodes whose turn the runner could not generate
// (recording why) and returns the others.
func (d *driver) dropFailed(active []*episode) []*episode {
	next := active[:0]
	for _, p := range active {
		if err := p.seq.Failed(); err != nil {
			p.t.fail(fmt.Sprintf("turn %d: generate: %v", p.t.Turns+1, err))
			p.t.FailedGenerating = true
			d.end(p)
			continue
		}
		next = append(next, p)
	}
	return next
}

// respondAll gets the environment's reply to every episode's latest turn
// (respond). A tool environment's replies (tool calls: searches, HTTP
// requests, sandboxed code) run concurrently across episodes, at most
// ToolWorkers at a time; other environments reply one episode after
// another, as their Respond may not expect concurrent calls.
func (d *driver) respondAll(ctx context.Context, active []*episode) {
	workers := 1
	switch {
	case d.agents:
		// An agent episode's Respond waits on its program, not on this
		// process: all of them wait at once.
		workers = max(1, len(active))
	case d.tools != nil:
		workers = d.opts.ToolWorkers
		if workers <= 0 {
			workers = 8
		}
	}
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for _, p := range active {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			d.respond(ctx, p)
		}()
	}
	wg.Wait()
}

// recordTurn appends the turn the sampler just played to the trajectory.
func (d *driver) recordTurn(p *episode) {
	t, turn := p.t, p.seq.Last()
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
	content := turn.Tokens
	p.stopText = ""
	if turn.StopToken {
		last := content[len(content)-1]
		content = content[:len(content)-1]
		p.stopText, _ = d.tok.Token(last)
	}
	p.text = d.tok.Decode(content)
	if p.agent != nil {
		p.agent.record(turn)
	}
}

// respond gets the reply to the latest turn: for a turn with tool calls,
// their results (the episode's Respond is not asked); otherwise the
// episode's Respond. It touches only p, so episodes respond concurrently.
func (d *driver) respond(ctx context.Context, p *episode) {
	p.reply, p.done, p.err = nil, false, nil
	msg := assistantMessage(d.tok.ToolCallFormat(), p.text)
	if d.tools != nil && p.tools != nil {
		tt := d.tools.run(ctx, p.tools, p.text)
		msg = tt.assistant
		t := p.t
		t.ToolCalls += tt.total
		t.ToolErrors += tt.errors
		for n, k := range tt.calls {
			t.toolCallsBy[n] += k
		}
		if len(tt.results) > 0 {
			p.msg, p.reply = msg, tt.results
			return
		}
	}
	p.msg = msg
	p.reply, p.done, p.err = respondSafely(ctx, p.ep, msg.Content)
}

// assistantMessage is a sampled turn as the rubric and the episode see it:
// its text, or for gpt-oss (harmony) its final channel with the analysis
// as reasoning, as vLLM returns a gpt-oss turn's content.
func assistantMessage(format tokenizer.ToolCallFormat, text string) chat.Message {
	msg := chat.Message{Role: "assistant", Content: text}
	if format == tokenizer.ToolCallsHarmony {
		turn := format.Parse(text)
		msg.Content = turn.Content
		if turn.Reasoning != "" {
			msg.ReasoningContent = &turn.Reasoning
		}
	}
	return msg
}

// continueEpisode records the reply and appends it as tokens after the
// turn; it reports whether the episode goes on.
func (d *driver) continueEpisode(p *episode) bool {
	t, turn := p.t, p.seq.Last()
	t.Messages = append(t.Messages, p.msg)
	p.conv = append(p.conv, p.msg)
	switch {
	case p.err != nil:
		t.fail(fmt.Sprintf("turn %d: respond: %v", t.Turns, p.err))
		if errors.Is(p.err, env.ErrFatal) && d.fatal == nil {
			d.fatal = p.err
		}
		return false
	case p.done || turn.CacheFull || p.maxTurns > 0 && t.Turns >= p.maxTurns:
		return false
	case p.agent != nil && p.agent.rewrite != nil:
		return d.restart(p)
	case len(p.reply) == 0:
		t.fail(fmt.Sprintf("turn %d: respond returned no reply and did not end the episode", t.Turns))
		return false
	}
	opts := d.chat
	if p.agent != nil {
		opts = p.agent.chat // with the tools the program offers
	}
	text, err := replyText(d.tok.ApplyChatTemplate, p.conv, p.reply, p.stopText, opts, d.tok.ToolCallFormat())
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
	// The next turn draws from a stream of its own (sampler.Seq.Reseed),
	// so that a server, which plays each turn as a request, samples it
	// alike.
	p.seq.Reseed(sampler.DeriveSeed(p.params.Seed, uint64(t.Turns)))
	// The episode goes on, so a turn cut by max_tokens does not truncate it.
	t.Truncated, t.TruncatedBy = false, ""
	t.Tokens = append(t.Tokens, ids...)
	if p.agent != nil {
		p.agent.appended(ids)
	}
	for range ids {
		t.ModelMask = append(t.ModelMask, false)
		t.Logprobs = append(t.Logprobs, 0)
	}
	t.Messages = append(t.Messages, p.reply...)
	p.conv = append(p.conv, p.reply...)
	return true
}
