package rollout

import (
	"context"
	"errors"
	"fmt"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/sampler"
)

// EndpointOptions shape the requests of EndpointGenerator.
type EndpointOptions struct {
	// EnableThinking, when set, is sent as chat_template_kwargs (vLLM's
	// and grpo serve's; hosted APIs refuse it).
	EnableThinking *bool
	// ReasoningEffort, when set, is sent as reasoning_effort (OpenAI's
	// field; vLLM hands it to gpt-oss's template, as grpo serve does).
	ReasoningEffort string
	// TokenIDs asks for token ids and raw log-probs (return_token_ids and
	// logprobs: vLLM and grpo serve), so trajectories can be trained on.
	TokenIDs bool
}

// EndpointGenerator generates through an endpoint's chat completions.
// Sampling settings at their defaults are not sent, so a hosted API sees
// only what it knows; top_k and min_p, when set, are vLLM's extras.
func EndpointGenerator(c *endpoints.Client, o EndpointOptions) Generator {
	return endpointGen{c: c, o: o}
}

type endpointGen struct {
	c *endpoints.Client
	o EndpointOptions
}

func (g endpointGen) Generate(ctx context.Context, conv []chat.Message, p sampler.Params) (Generation, error) {
	req := &endpoints.ChatRequest{Messages: conv, Temperature: &p.Temperature, Stop: p.Stop}
	if p.MaxTokens > 0 {
		req.MaxTokens = &p.MaxTokens
	}
	if p.TopP != 1 {
		req.TopP = &p.TopP
	}
	if p.TopK > 0 {
		req.TopK = &p.TopK
	}
	if p.MinP > 0 {
		req.MinP = &p.MinP
	}
	seed := endpoints.Seed(p.Seed)
	if !g.o.TokenIDs {
		// A hosted API gets a non-negative seed. (With TokenIDs the
		// server is vLLM or grpo serve, and grpo serve reads the whole
		// uint64 back, so a rollout seeds it as Local seeds itself.)
		seed &= 1<<63 - 1
	}
	req.Seed = &seed
	if g.o.EnableThinking != nil {
		req.ChatTemplateKwargs = map[string]any{"enable_thinking": *g.o.EnableThinking}
	}
	req.ReasoningEffort = g.o.ReasoningEffort
	if g.o.TokenIDs {
		req.ReturnTokenIDs, req.Logprobs = true, true
	}
	resp, err := g.c.Chat(ctx, req)
	if err != nil {
		var ee *endpoints.Error
		if errors.As(err, &ee) && ee.Status >= 400 && ee.Status < 500 && ee.Status != 429 {
			// A bad key, model or parameter fails every request alike.
			return Generation{}, &FatalError{err}
		}
		return Generation{}, err
	}
	ch := resp.Choices[0]
	out := Generation{Content: ch.Message.Text(), FinishReason: ch.FinishReason, PromptTokens: resp.PromptTokenIDs, Tokens: ch.TokenIDs}
	if g.o.TokenIDs {
		if ch.Logprobs == nil || len(ch.Logprobs.Content) != len(ch.TokenIDs) {
			return Generation{}, &FatalError{fmt.Errorf("endpoint %s returned %d token ids without a log-prob for each; it must be vLLM or grpo serve", g.c.ID(), len(ch.TokenIDs))}
		}
		for _, e := range ch.Logprobs.Content {
			out.Logprobs = append(out.Logprobs, float32(e.Logprob))
		}
	}
	return out, nil
}
