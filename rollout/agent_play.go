package rollout

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/sampler"
)

// startAgents starts an agent program for each queued episode, each with
// its own path of ic, and waits for the programs' first calls: a call's
// messages are its episode's prompt, rendered here (the examples'
// prompts are what the programs are given, not what they send). The
// episodes whose program failed to call are recorded as failed and left
// out of the queue. Episodes of one example whose programs sent the same
// prompt stay one group, so it is prefilled once.
func (d *driver) startAgents(ctx context.Context, ic *interceptor, spec env.AgentSpec, queue []*episode) []*episode {
	var wg sync.WaitGroup
	errs := make([]error, len(queue))
	for i, p := range queue {
		base, link := ic.open()
		prog, err := startAgent(ctx, spec, p.t.Example, base)
		if err != nil {
			link.end()
			errs[i] = err
			continue
		}
		p.agent = &agentEpisode{prog: prog, link: link, t: p.t, chat: d.chat, format: d.tok.ToolCallFormat()}
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs, err := p.agent.firstCall(ctx)
			if err == nil {
				p.t.Prompt = msgs
				p.t.PromptTokens, err = renderPrompt(d.tok, msgs, p.agent.chat)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	examples := make([]int, len(queue))
	for i, p := range queue {
		examples[i] = p.example
	}
	out := queue[:0]
	group, prevExample := -1, -1
	for i, p := range queue {
		if errs[i] != nil {
			p.t.fail(agentError(errs[i]))
			if p.agent != nil {
				p.agent.link.end()
				p.agent.prog.stop()
				p.agent = nil
			}
			continue
		}
		prev := len(out) - 1
		if prev < 0 || examples[i] != prevExample || !slices.Equal(p.t.PromptTokens, out[prev].t.PromptTokens) {
			group++
		}
		prevExample = examples[i]
		p.example = group
		out = append(out, p)
	}
	return out
}

// restart starts a new sequence for an agent episode whose program
// rewrote the conversation: the call's messages rendered as a prompt,
// in a slot of its own (the old one is released first). It reports
// whether the episode goes on.
func (d *driver) restart(p *episode) bool {
	a, t := p.agent, p.t
	msgs := a.rewrite.messages
	a.chat.Tools = a.rewrite.tools
	a.rewrite = nil
	ids, err := renderPrompt(d.tok, msgs, a.chat)
	if err != nil {
		t.fail(fmt.Sprintf("turn %d: rendering the agent's rewritten conversation: %v", t.Turns, err))
		return false
	}
	d.run.Release(p.seq)
	p.seq = nil
	if !d.run.CanStart(len(ids), 1) {
		t.Truncated, t.TruncatedBy = true, TruncatedContext
		return false
	}
	params := p.params
	params.Seed = sampler.DeriveSeed(p.params.Seed, uint64(t.Turns))
	seqs, err := d.run.StartGroup(ids, []sampler.Params{params})
	if err != nil {
		t.fail(fmt.Sprintf("turn %d: starting the agent's rewritten conversation: %v", t.Turns, err))
		return false
	}
	p.seq = seqs[0]
	p.conv = slices.Clone(msgs)
	a.started(ids)
	// The episode goes on, so a turn cut by max_tokens does not truncate it.
	t.Truncated, t.TruncatedBy = false, ""
	return true
}

// abandonAgents kills the programs of episodes that never started or
// never ended (ended ones are closed already), leaving their
// trajectories as they are.
func abandonAgents(eps []*episode) {
	for _, p := range eps {
		if a := p.agent; a != nil && !a.closed {
			a.closed = true
			a.link.end()
			a.prog.stop()
		}
	}
}
