package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// chatPlan is a validated chat request: its prompt tokens and choices.
type chatPlan struct {
	req    chatRequest
	prompt []int32
	params []sampler.Params
	top    int // top_logprobs; -1 without logprobs
}

// planChat validates a chat request and renders its prompt with the chat
// template (tools included, chat_template_kwargs as template variables).
func (s *Server) planChat(req *chatRequest) (*chatPlan, *apiError) {
	msgs, e := req.messages()
	if e != nil {
		return nil, e
	}
	for i, t := range req.Tools {
		var tool struct {
			Type     string `json:"type"`
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(t, &tool); err != nil || tool.Type != "function" || tool.Function == nil || tool.Function.Name == "" {
			return nil, badRequest("tools", "tools[%d]: want {\"type\": \"function\", \"function\": {\"name\": ..., \"parameters\": ...}}", i)
		}
	}
	if c := string(bytes.TrimSpace(req.ToolChoice)); c != "" && c != "null" && c != `"auto"` && c != `"none"` {
		return nil, badRequest("tool_choice", "tool_choice %s is not supported: grpo serve does not constrain decoding; use \"auto\" or \"none\"", c)
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		return nil, badRequest("response_format", "response_format %q is not supported: grpo serve does not constrain decoding", rf.Type)
	}
	top := -1
	if req.Logprobs {
		top = 0
		if req.TopLogprobs != nil {
			top = *req.TopLogprobs
		}
	} else if req.TopLogprobs != nil && *req.TopLogprobs > 0 {
		return nil, badRequest("top_logprobs", "top_logprobs needs logprobs = true")
	}
	maxTokens := req.MaxTokens
	if req.MaxCompletionTokens != nil {
		maxTokens = req.MaxCompletionTokens
	}
	params, e := req.params(maxTokens, max(0, top), s.stops)
	if e != nil {
		return nil, e
	}
	opts := tokenizer.ChatOptions{AddGenerationPrompt: true, Tools: req.Tools}
	if req.AddGenerationPrompt != nil {
		opts.AddGenerationPrompt = *req.AddGenerationPrompt
	}
	for k, v := range req.ChatTemplateKwargs {
		if k == "enable_thinking" {
			b, ok := v.(bool)
			if !ok {
				return nil, badRequest("chat_template_kwargs.enable_thinking", "chat_template_kwargs.enable_thinking: want true or false")
			}
			opts.EnableThinking = &b
			continue
		}
		if opts.Vars == nil {
			opts.Vars = map[string]any{}
		}
		opts.Vars[k] = v
	}
	text, err := s.tok.ApplyChatTemplate(msgs, opts)
	if err != nil {
		return nil, badRequest("messages", "rendering the chat template: %v", err)
	}
	return &chatPlan{req: *req, prompt: s.tok.Encode(text), params: params, top: top}, nil
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if e := decode(r.Body, &req); e != nil {
		writeError(w, e)
		return
	}
	plan, e := s.planChat(&req)
	if e != nil {
		writeError(w, e)
		return
	}
	ad, e := s.resolveModel(req.Model)
	if e != nil {
		writeError(w, e)
		return
	}
	j, e := s.submit(r.Context(), ad, plan.prompt, plan.params, -1, req.Stream)
	if e != nil {
		writeError(w, e)
		return
	}
	name := s.responseModel(req.Model)
	id := s.newID("chatcmpl")
	if req.Stream {
		s.streamChat(w, r, j, plan, id, name)
		return
	}
	outs, ok := awaitOutputs(w, r, j)
	if !ok {
		return
	}
	resp := endpoints.ChatResponse{ID: id, Object: "chat.completion", Created: s.created, Model: name}
	pt, ct := usageOf(plan.prompt, outs)
	resp.Usage = &endpoints.Usage{PromptTokens: pt, CompletionTokens: ct, TotalTokens: pt + ct}
	if req.ReturnTokenIDs {
		resp.PromptTokenIDs = plan.prompt
	}
	parse := s.parsesTools(&req)
	for i := range outs {
		o := &outs[i]
		msg, finish := s.assistantMessage(o, parse, fmt.Sprint(id, "-", i))
		c := endpoints.ChatChoice{Index: i, Message: msg, FinishReason: finish}
		if plan.top >= 0 {
			c.Logprobs = &endpoints.ChatLogprobs{Content: s.chatLogprobs(o, 0, len(o.Tokens))}
		}
		if req.ReturnTokenIDs {
			c.TokenIDs = o.Tokens
		}
		resp.Choices = append(resp.Choices, c)
	}
	writeJSON(w, http.StatusOK, resp)
}

// chatLogprobs are the entries of o's tokens [from, to): every generated
// token, the stop token included, so they line up with token_ids.
func (s *Server) chatLogprobs(o *output, from, to int) []endpoints.TokenLogprob {
	out := make([]endpoints.TokenLogprob, 0, to-from)
	for k := from; k < to; k++ {
		t := s.tokenText(o.Tokens[k])
		e := endpoints.TokenLogprob{Token: t, Logprob: float64(o.Logprobs[k]), Bytes: bytesOf(t), TopLogprobs: []endpoints.TopLogprob{}}
		if k < len(o.Top) {
			for _, alt := range o.Top[k] {
				at := s.tokenText(alt.ID)
				e.TopLogprobs = append(e.TopLogprobs, endpoints.TopLogprob{Token: at, Logprob: float64(alt.Logprob), Bytes: bytesOf(at)})
			}
		}
		out = append(out, e)
	}
	return out
}

// chatChunk is one event of a streamed chat completion.
type chatChunk struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Created        int64             `json:"created"`
	Model          string            `json:"model"`
	Choices        []chatChunkChoice `json:"choices"`
	Usage          *endpoints.Usage  `json:"usage,omitempty"`
	PromptTokenIDs []int32           `json:"prompt_token_ids,omitempty"`
}

type chatChunkChoice struct {
	Index        int                     `json:"index"`
	Delta        chatDelta               `json:"delta"`
	Logprobs     *endpoints.ChatLogprobs `json:"logprobs"`
	FinishReason *string                 `json:"finish_reason"`
	TokenIDs     []int32                 `json:"token_ids,omitempty"`
}

type chatDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []chunkToolCall `json:"tool_calls,omitempty"`
}

// chunkToolCall is a whole tool call in a stream's delta; index orders
// the calls of a choice.
type chunkToolCall struct {
	Index int `json:"index"`
	endpoints.ToolCallWire
}

// streamChat sends the choices as they grow: a first chunk per choice
// with the role, then content deltas (with their tokens' log-probs and
// ids when asked), a last chunk with the finish reason, an optional usage
// chunk, and [DONE].
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, j *job, plan *chatPlan, id, name string) {
	st := newSSE(w)
	req := &plan.req
	n, hold := len(plan.params), holdBack(req.Stop)
	// With a tool-call parser the text is held until the turn ends, then
	// sent as content or as whole tool calls.
	parse := s.parsesTools(req)
	if parse {
		hold = 1 << 30
	}
	chunk := func(cs ...chatChunkChoice) chatChunk {
		return chatChunk{ID: id, Object: "chat.completion.chunk", Created: s.created, Model: name, Choices: cs}
	}
	empty := ""
	for i := range n {
		c := chunk(chatChunkChoice{Index: i, Delta: chatDelta{Role: "assistant", Content: &empty}})
		if i == 0 && req.ReturnTokenIDs {
			c.PromptTokenIDs = plan.prompt
		}
		if st.send(c) != nil {
			return
		}
	}
	sentText, sentToks, finished := make([]int, n), make([]int, n), make([]bool, n)
	for {
		select {
		case <-j.notify:
		case <-r.Context().Done():
			return
		}
		outs, done, err := j.snapshot()
		if err != nil {
			if r.Context().Err() == nil {
				st.fail(genError(err))
				st.done()
			}
			return
		}
		for i := range outs {
			o := &outs[i]
			if finished[i] {
				continue
			}
			text := s.visible(o, hold)
			delta := text[min(sentText[i], len(text)):]
			toks := o.Tokens[sentToks[i]:]
			wantToks := len(toks) > 0 && (plan.top >= 0 || req.ReturnTokenIDs)
			if delta == "" && !wantToks && o.Finish == "" {
				continue
			}
			c := chatChunkChoice{Index: i, FinishReason: finishOf(o)}
			if parse && o.Finish != "" {
				msg, finish := s.assistantMessage(o, true, fmt.Sprint(id, "-", i))
				c.FinishReason = &finish
				for k, tc := range msg.ToolCalls {
					c.Delta.ToolCalls = append(c.Delta.ToolCalls, chunkToolCall{Index: k, ToolCallWire: tc})
				}
				if msg.ToolCalls != nil {
					delta = ""
					if msg.Content != nil {
						delta = *msg.Content
					}
				}
			}
			if delta != "" {
				c.Delta.Content = &delta
			}
			if plan.top >= 0 && len(toks) > 0 {
				c.Logprobs = &endpoints.ChatLogprobs{Content: s.chatLogprobs(o, sentToks[i], len(o.Tokens))}
			}
			if req.ReturnTokenIDs {
				c.TokenIDs = toks
			}
			if st.send(chunk(c)) != nil {
				return
			}
			sentText[i], sentToks[i], finished[i] = len(text), len(o.Tokens), o.Finish != ""
		}
		if done {
			if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
				pt, ct := usageOf(plan.prompt, outs)
				c := chunk()
				c.Choices = []chatChunkChoice{}
				c.Usage = &endpoints.Usage{PromptTokens: pt, CompletionTokens: ct, TotalTokens: pt + ct}
				st.send(c)
			}
			st.done()
			return
		}
	}
}
