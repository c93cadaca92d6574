package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// agentEpisode is an episode played by an agent program through the
// interception endpoint. The program's first call gives the prompt
// (firstCall); each turn the driver generates answers the pending call
// (Respond), and the program's next call is the environment's reply when
// it extends the conversation (conversationExtends), or a new sample
// when it rewrites it (rewrite, which the driver restarts from). The
// program's exit ends the episode. Every call is recorded (record) and,
// when the episode ends, becomes the trajectory's samples (agentSamples).
type agentEpisode struct {
	prog    *agentProgram
	link    *agentLink
	t       *Trajectory
	conv    []chat.Message // the conversation as the program last sent it, with the model's turns
	pending *agentCall     // the call the next turn answers
	cur     []int32        // the current sequence's tokens: what the next turn is generated after
	calls   []AgentCall
	// rewrite is a call that did not extend the conversation: the driver
	// starts a new sequence on its messages.
	rewrite *agentCall
	finish  string // the latest turn's finish reason
	// chat renders the episode's prompts and replies: Play's options with
	// the tools the program offers (its latest sequence's first call's);
	// format reads the model's calls of them.
	chat   tokenizer.ChatOptions
	format tokenizer.ToolCallFormat
	closed bool
	// admitted: a cache slot took the episode (its deadline restarted).
	admitted bool
}

// errAgentOver is what a program's later calls are answered with once
// its episode has ended without it.
var errAgentOver = errors.New("the episode is over (max turns or the context); the program should exit")

// firstCall waits for the program's first call: its messages are the
// episode's prompt.
func (a *agentEpisode) firstCall(ctx context.Context) ([]chat.Message, error) {
	c, err := a.nextCall(ctx)
	if err != nil {
		return nil, err
	}
	if c == nil {
		err := a.prog.exitError()
		if err == nil {
			err = errors.New("the agent program exited without calling the model; it must call OPENAI_BASE_URL's chat/completions at least once")
		}
		return nil, err
	}
	a.prog.hold() // until started: waiting for a slot is not the program's time
	if len(c.tools) > 0 && a.format == tokenizer.ToolCallsNone {
		return nil, errors.New("the agent program offers tools, but this model's chat template renders no tool calls grpo can read (Hermes <tool_call> as Qwen2.5/Qwen3, Qwen3.5's XML calls, or Llama 3.1's JSON); use a model whose template has tools, or call without tools")
	}
	a.pending, a.conv, a.chat.Tools = c, c.messages, c.tools
	return c.messages, nil
}

// nextCall waits for the program's next call; nil when it exited first.
func (a *agentEpisode) nextCall(ctx context.Context) (*agentCall, error) {
	select {
	case c := <-a.link.calls:
		return c, nil
	case <-a.prog.exited:
		return nil, nil
	case <-a.prog.ctx.Done():
		<-a.prog.exited
		return nil, a.prog.exitError()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// record notes the turn just generated for the pending call.
func (a *agentEpisode) record(turn *sampler.Turn) {
	a.calls = append(a.calls, AgentCall{Prompt: slices.Clone(a.cur), Completion: slices.Clone(turn.Tokens), Logprobs: slices.Clone(turn.Logprobs)})
	a.cur = append(a.cur, turn.Tokens...)
	a.finish = turn.FinishReason
}

// started is called when a sequence starts on prompt (the first call's,
// or a rewritten conversation's).
func (a *agentEpisode) started(prompt []int32) {
	a.cur = slices.Clone(prompt)
	if !a.admitted {
		a.admitted = true
		a.prog.restart()
	}
}

// appended is called when the reply's tokens are appended to the sequence.
func (a *agentEpisode) appended(ids []int32) { a.cur = append(a.cur, ids...) }

// Respond answers the pending call with the turn's text and waits for
// the program: its next call's new messages are the reply; a call that
// rewrites the conversation sets rewrite; its exit ends the episode,
// failed when its status is not 0.
func (a *agentEpisode) Respond(ctx context.Context, text string) ([]chat.Message, bool, error) {
	last := a.calls[len(a.calls)-1]
	ans := a.answer(text)
	ans.promptTokens, ans.completion = len(last.Prompt), len(last.Completion)
	a.pending.answer <- ans
	a.pending = nil
	a.conv = append(a.conv, chat.Message{Role: "assistant", Content: ans.content, ToolCalls: ans.toolCalls})
	c, err := a.nextCall(ctx)
	switch {
	case err != nil:
		return nil, false, err
	case c == nil:
		return nil, true, a.prog.exitError()
	}
	a.pending = c
	// Other tools change the prompt's start (the template writes them
	// there): a rewrite, like other messages.
	if reply, ok := conversationExtends(a.conv, c.messages); ok && sameTools(a.chat.Tools, c.tools) {
		a.conv = c.messages
		return reply, false, nil
	}
	a.conv, a.rewrite = c.messages, c
	return nil, false, nil
}

// answer is the turn as the pending call's answer: its text and, when
// the call offered tools and the model called them (all readably), the
// calls, with finish reason "tool_calls". The program reads the text
// through JSON, which turns each invalid UTF-8 byte (a turn cut inside a
// character) into U+FFFD, as converting to runes does, so that what it
// sends back restates the answer.
func (a *agentEpisode) answer(text string) agentAnswer {
	ans := agentAnswer{content: string([]rune(text)), finish: a.finish}
	if len(a.pending.tools) == 0 {
		return ans
	}
	parsed := a.format.ParseWithTools(text, a.pending.tools)
	for _, c := range parsed.Calls {
		if c.Err != "" {
			return ans // the program gets the text and sees what went wrong
		}
		var tc chat.ToolCall
		tc.Type, tc.Function.Name, tc.Function.Arguments = "function", c.Name, c.Arguments
		ans.toolCalls = append(ans.toolCalls, tc)
	}
	if len(ans.toolCalls) > 0 {
		ans.content, ans.finish = string([]rune(parsed.Content)), "tool_calls"
	}
	return ans
}

// Close ends the episode however it ended: later calls are refused, the
// program is killed if it still runs, and the trajectory gets its
// samples and, as the final assistant message the rubric reads, the
// program's standard output.
func (a *agentEpisode) Close() error {
	if a.closed {
		return nil
	}
	a.closed = true
	a.link.end()
	if a.pending != nil {
		a.pending.answer <- agentAnswer{err: errAgentOver}
	}
	a.prog.stop()
	t := a.t
	t.AgentCalls = a.calls
	samples := agentSamples(a.calls)
	if len(samples) > 0 {
		// The sample holding the last call is the trajectory's own, so that
		// its truncation and expert routing (the last sequence's) apply.
		own := agentSampleOf(samples, a.calls[len(a.calls)-1])
		s := samples[own]
		t.PromptTokens, t.Tokens, t.ModelMask, t.Logprobs = s.PromptTokens, s.Tokens, s.ModelMask, s.Logprobs
		t.Rewritten = append(slices.Clone(samples[:own]), samples[own+1:]...)
	}
	if out := strings.TrimSpace(a.prog.out.String()); out != "" {
		t.Messages = append(t.Messages, chat.Message{Role: "assistant", Content: out})
	}
	return nil
}

// agentError labels a failure to start an agent episode.
func agentError(err error) string { return fmt.Sprintf("agent: %v", err) }
