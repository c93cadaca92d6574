package rollout

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// agentEnv is an environment played by an agent program.
type agentEnv struct{ spec env.AgentSpec }

func (agentEnv) ID() string                             { return "agent" }
func (agentEnv) Examples(string) ([]env.Example, error) { return nil, nil }
func (agentEnv) NewEpisode(env.Example) env.Episode {
	panic("an agent environment's episodes are its program's")
}
func (agentEnv) Rubric() *rubric.Rubric { return answerRubric }
func (e agentEnv) Agent() env.AgentSpec { return e.spec }
func (agentEnv) MaxTurns() int          { return 5 }

// answerRubric rewards a final assistant message equal to the answer.
var answerRubric, _ = rubric.Weighted(rubric.Term{Name: "answer", Weight: 1, Func: rubric.Reward(func(r rubric.Rollout) float64 {
	if n := len(r.Completion); n > 0 && r.Completion[n-1].Content == r.Answer {
		return 1
	}
	return 0
})})

func scriptedAgent(t *testing.T, mode string, timeout time.Duration) agentEnv {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the scripted agent needs it")
	}
	return agentEnv{spec: env.AgentSpec{Command: []string{"python3", "../testdata/agents/scripted_agent.py"}, Env: []string{"AGENT_MODE=" + mode},
		Timeout: timeout, PromptTokens: 64}}
}

func agentExamples() []env.Example {
	return []env.Example{
		{ID: "a", Answer: "1", Prompt: []chat.Message{{Role: "system", Content: "You are an agent."}, {Role: "user", Content: "Pick a number."}}},
		{ID: "b", Answer: "0", Prompt: []chat.Message{{Role: "user", Content: "Pick another."}}},
	}
}

// TestAgentEpisodeSamplesAreTheCalls plays the scripted agent — a call,
// a call that extends it, a call that rewrites the history, then an
// answer on standard output — in process, and checks that the
// trajectory's samples are exactly the calls' tokens: the first two
// calls one sample, the third another, each call's prompt and
// completion where the call made them, the completions trained with
// their log-probs, the prompt the program's first call rendered.
func TestAgentEpisodeSamplesAreTheCalls(t *testing.T) {
	e := scriptedAgent(t, "", time.Minute)
	tok := qwen3Tokenizer(t)
	m := vocabModel(t, tok)
	exs := agentExamples()
	trajs, err := Local(context.Background(), m, tok, e, exs, 2, rolloutParams(), 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m := Summarize(trajs); m["agent/calls"] != 3 || m["agent/samples"] != 2 {
		t.Errorf("agent/calls %v, agent/samples %v; want 3 and 2", m["agent/calls"], m["agent/samples"])
	}
	for i, tr := range trajs {
		if len(tr.Errors) > 0 {
			t.Fatalf("trajectory %d failed: %v", i, tr.Errors)
		}
		if len(tr.AgentCalls) != 3 || tr.Turns != 3 || len(tr.Rewritten) != 1 {
			t.Fatalf("trajectory %d: %d calls, %d turns, %d other samples; want 3, 3, 1", i, len(tr.AgentCalls), tr.Turns, len(tr.Rewritten))
		}
		want, err := RenderPrompt(tok, exs[i/2].Prompt, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := tr.AgentCalls
		if !slices.Equal(c[0].Prompt, want) {
			t.Errorf("trajectory %d: the first call's prompt is not the example's rendered", i)
		}
		first := tr.Rewritten[0]
		own := TokenSample{PromptTokens: tr.PromptTokens, Tokens: tr.Tokens, ModelMask: tr.ModelMask, Logprobs: tr.Logprobs}
		checkCallIn(t, i, 0, c[0], first, 0)
		checkCallIn(t, i, 1, c[1], first, len(c[0].Prompt)+len(c[0].Completion)-len(first.PromptTokens))
		checkCallIn(t, i, 2, c[2], own, 0)
		if n := len(first.PromptTokens) + len(first.Tokens); n != len(c[1].Prompt)+len(c[1].Completion) {
			t.Errorf("trajectory %d: the first sample has %d tokens, more than its calls'", i, n)
		}
		if n := len(own.PromptTokens) + len(own.Tokens); n != len(c[2].Prompt)+len(c[2].Completion) {
			t.Errorf("trajectory %d: the last sample has %d tokens, more than its call's", i, n)
		}
		last := tr.Messages[len(tr.Messages)-1]
		if last.Role != "assistant" || (last.Content != "0" && last.Content != "1") {
			t.Errorf("trajectory %d: the final message %+v is not the program's answer", i, last)
		}
		if wantR := map[bool]float64{true: 1, false: 0}[last.Content == tr.Answer]; tr.Reward != wantR {
			t.Errorf("trajectory %d: reward %v, want %v", i, tr.Reward, wantR)
		}
	}
}

// checkCallIn checks that call c's tokens are sample s's where the call
// made them: its prompt is the sample's tokens up to the completion's
// start (off tokens after the sample's prompt), its completion follows,
// trained, with its log-probs.
func checkCallIn(t *testing.T, traj, call int, c AgentCall, s TokenSample, off int) {
	t.Helper()
	full := append(slices.Clone(s.PromptTokens), s.Tokens...)
	end := len(c.Prompt) + len(c.Completion)
	if end > len(full) || !slices.Equal(full[:len(c.Prompt)], c.Prompt) || !slices.Equal(full[len(c.Prompt):end], c.Completion) {
		t.Errorf("trajectory %d call %d: its tokens are not its sample's", traj, call)
		return
	}
	start := len(c.Prompt) - len(s.PromptTokens)
	for j := range c.Completion {
		if !s.ModelMask[start+j] || s.Logprobs[start+j] != c.Logprobs[j] {
			t.Errorf("trajectory %d call %d: completion token %d is not trained with its log-prob", traj, call, j)
			return
		}
	}
	for j := off; j < start; j++ {
		if s.ModelMask[j] {
			t.Errorf("trajectory %d call %d: its new prompt token %d is marked as the model's", traj, call, j)
			return
		}
	}
}

// TestAgentEpisodeTimeouts: a program that never calls, one that calls
// once and then hangs, and one that fails end their episodes with one
// line each, within their deadline, and the run goes on.
func TestAgentEpisodeTimeouts(t *testing.T) {
	tok := qwen3Tokenizer(t)
	m := vocabModel(t, tok)
	silent := agentEnv{spec: env.AgentSpec{Command: []string{"sleep", "60"}, Timeout: 300 * time.Millisecond, PromptTokens: 64}}
	for _, c := range []struct {
		name string
		e    agentEnv
		want string
	}{
		{"never calls", silent, "ran past its timeout"},
		{"hangs", scriptedAgent(t, "hang", time.Second), "ran past its timeout"},
		{"fails", scriptedAgent(t, "fail", time.Minute), "exit status 3 (stderr: giving up)"},
		{"not found", agentEnv{spec: env.AgentSpec{Command: []string{"/nonexistent/agent"}}}, "starting the agent program"},
	} {
		t0 := time.Now()
		trajs, err := Local(context.Background(), m, tok, c.e, agentExamples()[:1], 2, rolloutParams(), 1, Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := time.Since(t0); d > 20*time.Second {
			t.Errorf("%s: took %v", c.name, d)
		}
		for _, tr := range trajs {
			if len(tr.Errors) != 1 || !strings.Contains(tr.Errors[0], c.want) || tr.Reward != 0 {
				t.Errorf("%s: errors %q reward %v, want one naming %q", c.name, tr.Errors, tr.Reward, c.want)
			}
		}
	}
}

// TestAgentEpisodeMaxTurns: an episode cut by the environment's turn
// limit answers the program's pending call with an error and kills it;
// its calls so far are its sample.
func TestAgentEpisodeMaxTurns(t *testing.T) {
	tok := qwen3Tokenizer(t)
	m := vocabModel(t, tok)
	e := scriptedAgent(t, "", time.Minute)
	trajs, err := Local(context.Background(), m, tok, e, agentExamples()[:1], 1, rolloutParams(), 1, Options{MaxTurns: 1})
	if err != nil {
		t.Fatal(err)
	}
	tr := trajs[0]
	if len(tr.Errors) > 0 || tr.Turns != 1 || len(tr.AgentCalls) != 1 || len(tr.Rewritten) != 0 {
		t.Fatalf("errors %v, %d turns, %d calls, %d other samples; want none, 1, 1, 0", tr.Errors, tr.Turns, len(tr.AgentCalls), len(tr.Rewritten))
	}
	if c := tr.AgentCalls[0]; !slices.Equal(tr.PromptTokens, c.Prompt) || !slices.Equal(tr.Tokens, c.Completion) {
		t.Errorf("the sample is not the call's tokens")
	}
}

// TestAgentEpisodeNotRemote: a hosted chat API cannot play an agent
// program's episodes (it has no token ids to record): RemoteEngine says
// so instead of playing them as single-turn.
func TestAgentEpisodeNotRemote(t *testing.T) {
	_, err := RemoteEngine{Gen: nopGenerator{}}.Play(context.Background(), agentEnv{}, agentExamples(), 1, rolloutParams(), 1, Options{})
	if err == nil || !strings.Contains(err.Error(), "agent program") {
		t.Fatalf("error %v, want one naming the agent program", err)
	}
}

type nopGenerator struct{}

func (nopGenerator) Generate(context.Context, []chat.Message, sampler.Params) (Generation, error) {
	return Generation{}, nil
}

// TestAgentEpisodeOnServer plays the scripted agent with its turns
// generated by an inference server (ServerEngine): each completions
// request the server gets is one of the program's calls, its prompt ids
// the call's recorded prompt, and the two samples are those calls'.
func TestAgentEpisodeOnServer(t *testing.T) {
	e := scriptedAgent(t, "", time.Minute)
	tok := qwen3Tokenizer(t)
	var mu sync.Mutex
	var prompts [][]int32
	c := fakeServer(t, func(req map[string]any) (int, string) {
		mu.Lock()
		prompts = append(prompts, toIDs(req["prompt"]))
		mu.Unlock()
		return 200, completion([]int{11, 12, int(tok.EOS()[0])}, []float64{-0.5, -1.25, -0.125}, "stop")
	})
	eng, err := NewServerEngine(context.Background(), c, ServerOptions{Model: "base", AdapterDir: t.TempDir(), Tok: tok, Config: &model.Config{VocabSize: tok.VocabSize(), MaxPositions: 4096}})
	if err != nil {
		t.Fatal(err)
	}
	trajs, err := eng.Play(context.Background(), e, agentExamples()[:1], 1, rolloutParams(), 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := trajs[0]
	if len(tr.Errors) > 0 || len(tr.AgentCalls) != 3 || len(prompts) != 3 || len(tr.Rewritten) != 1 {
		t.Fatalf("errors %v, %d calls, %d requests, %d other samples; want none, 3, 3, 1", tr.Errors, len(tr.AgentCalls), len(prompts), len(tr.Rewritten))
	}
	for i, call := range tr.AgentCalls {
		if !slices.Equal(call.Prompt, prompts[i]) || !slices.Equal(call.Completion, []int32{11, 12, tok.EOS()[0]}) {
			t.Errorf("call %d is not the server's request %d and its reply", i, i)
		}
	}
	checkCallIn(t, 0, 0, tr.AgentCalls[0], tr.Rewritten[0], 0)
	checkCallIn(t, 0, 1, tr.AgentCalls[1], tr.Rewritten[0], len(tr.AgentCalls[0].Prompt)+3-len(tr.Rewritten[0].PromptTokens))
	checkCallIn(t, 0, 2, tr.AgentCalls[2], TokenSample{PromptTokens: tr.PromptTokens, Tokens: tr.Tokens, ModelMask: tr.ModelMask, Logprobs: tr.Logprobs}, 0)
}

// TestAgentEpisodePromptTooLong: a program whose first call does not fit
// the sampler's slots fails its own rollout, named, and Play goes on.
func TestAgentEpisodePromptTooLong(t *testing.T) {
	e := scriptedAgent(t, "", time.Minute)
	tok := qwen3Tokenizer(t)
	s, err := sampler.New(vocabModel(t, tok), tok, sampler.Config{Slots: 2, MaxLen: 8, PrefillTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	trajs, err := Play(context.Background(), s, tok, e, agentExamples()[:1], 2, rolloutParams(), 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trajs {
		if len(tr.Errors) != 1 || !strings.Contains(tr.Errors[0], "start:") {
			t.Errorf("errors %q, want the start's", tr.Errors)
		}
	}
}

// TestAgentEpisodeToolCalls: a program that offers tools gets the
// model's tool calls (read in the chat template's format) as OpenAI
// tool_calls, and its next call — the calls sent back with their results
// — extends the same sample: the tool results are appended as tokens,
// and the first prompt is rendered with the tools.
func TestAgentEpisodeToolCalls(t *testing.T) {
	e := scriptedAgent(t, "tools", time.Minute)
	tok := qwen3Tokenizer(t)
	turn := append(tok.Encode("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>"), tok.EOS()[0])
	ids := make([]int, len(turn))
	lps := make([]float64, len(turn))
	for i, id := range turn {
		ids[i], lps[i] = int(id), -0.5
	}
	c := fakeServer(t, func(map[string]any) (int, string) { return 200, completion(ids, lps, "stop") })
	eng, err := NewServerEngine(context.Background(), c, ServerOptions{Model: "base", AdapterDir: t.TempDir(), Tok: tok, Config: &model.Config{VocabSize: tok.VocabSize(), MaxPositions: 4096}})
	if err != nil {
		t.Fatal(err)
	}
	p := rolloutParams()
	p.MaxTokens = 64
	trajs, err := eng.Play(context.Background(), e, agentExamples()[:1], 1, p, 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := trajs[0]
	if len(tr.Errors) > 0 || len(tr.AgentCalls) != 2 || len(tr.Rewritten) != 0 {
		t.Fatalf("errors %v, %d calls, %d other samples; want none, 2, 0", tr.Errors, len(tr.AgentCalls), len(tr.Rewritten))
	}
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "add", "description": "Add one to a.", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}`)}
	text, err := tok.ApplyChatTemplate(agentExamples()[0].Prompt, tokenizer.ChatOptions{Tools: tools, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.AgentCalls[0].Prompt, tok.Encode(text)) {
		t.Error("the first call's prompt is not rendered with the program's tools")
	}
	own := TokenSample{PromptTokens: tr.PromptTokens, Tokens: tr.Tokens, ModelMask: tr.ModelMask, Logprobs: tr.Logprobs}
	checkCallIn(t, 0, 0, tr.AgentCalls[0], own, 0)
	checkCallIn(t, 0, 1, tr.AgentCalls[1], own, len(turn))
	if reply := tok.Decode(tr.AgentCalls[1].Prompt[len(tr.AgentCalls[0].Prompt)+len(turn):]); !strings.Contains(reply, "<tool_response>\n2\n</tool_response>") {
		t.Errorf("the tool result is not appended as the template writes it: %q", reply)
	}
}

// TestAgentDeadlineHeldWhileQueued: a program whose first call came in
// and whose episode waits for a cache slot (hold) is not killed however
// long it waits; once admitted (restart) it has the whole timeout again,
// and past it it is killed and its error says so.
func TestAgentDeadlineHeldWhileQueued(t *testing.T) {
	a, err := startAgent(context.Background(), env.AgentSpec{Command: []string{"sleep", "30"}, Timeout: 400 * time.Millisecond}, env.Example{}, "http://127.0.0.1:1/v1")
	if err != nil {
		t.Fatal(err)
	}
	defer a.stop()
	a.hold()
	select {
	case <-a.exited:
		t.Fatal("a held program was killed")
	case <-time.After(time.Second):
	}
	a.restart()
	select {
	case <-a.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the restarted deadline did not kill the program")
	}
	if err := a.exitError(); err == nil || !strings.Contains(err.Error(), "ran past its timeout") {
		t.Errorf("exit error %v, want one naming the timeout", err)
	}
}
