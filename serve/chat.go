package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/grpo-dev/grpo/chat"
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
	if err := chat.CheckReasoningEffort(req.ReasoningEffort); err != nil {
		return nil, badRequest("reasoning_effort", "%v", err)
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		return nil, badRequest("response_format", "response_format %q is not supported: grpo serve does not constrain decoding", rf.Type)
	}
	top := -1
	if req.TopLogprobs != nil && *req.TopLogprobs < 0 {
		return nil, badRequest("top_logprobs", "top_logprobs = %d: want 0 to %d", *req.TopLogprobs, sampler.MaxTopLogprobs)
	}
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
	params, e := req.params(maxTokens, max(0, top), s.stops, s.limits())
	if e != nil {
		return nil, e
	}
	opts := tokenizer.ChatOptions{AddGenerationPrompt: true, Tools: req.Tools, ReasoningEffort: req.ReasoningEffort}
	if w := s.tok.ReasoningEffortWarning("reasoning_effort", req.ReasoningEffort); w != "" {
		s.warnOnce.Do(func() { s.logf("warning: %s", w) })
	}
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
	if e := s.checkPromptText(text, "messages"); e != nil {
		return nil, e
	}
	return &chatPlan{req: *req, prompt: s.tok.Encode(text), params: params, top: top}, nil
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if e := s.decodeBody(w, r, &req); e != nil {
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
	j, e := s.submit(r.Context(), ad, plan.prompt, "messages", plan.params, -1, req.Stream)
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
	countTokens(r, pt, ct)
	resp.Usage = &endpoints.Usage{PromptTokens: pt, CompletionTokens: ct, TotalTokens: pt + ct}
	if req.ReturnTokenIDs {
		resp.PromptTokenIDs = plan.prompt
	}
	parse := s.parsesTools(&req)
	for i := range outs {
		o := &outs[i]
		msg, finish := s.assistantMessage(o, parse, req.Tools, fmt.Sprint(id, "-", i))
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
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chunkToolCall `json:"tool_calls,omitempty"`
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
	hold := holdBack(req.Stop)
	// With a tool-call parser the text is held until the turn ends, then
	// sent as content or as whole tool calls.
	parse := s.parsesTools(req)
	harmony := s.tok.ToolCallFormat() == tokenizer.ToolCallsHarmony
	if parse && !harmony {
		hold = 1 << 30
	}
	kind := &chatStream{s: s, plan: plan, id: id, name: name, parse: parse}
	if harmony {
		kind.harmony = make([]harmonySent, len(plan.params))
		kind.hold = hold
	}
	empty := ""
	for i := range plan.params {
		c := kind.chunk(chatChunkChoice{Index: i, Delta: chatDelta{Role: "assistant", Content: &empty}})
		if i == 0 && req.ReturnTokenIDs {
			c.PromptTokenIDs = plan.prompt
		}
		if st.send(c) != nil {
			return
		}
	}
	s.streamChoices(st, r, j, hold, req.includeUsage(), kind)
}

// chatStream shapes a chat completion's stream events.
type chatStream struct {
	s        *Server
	plan     *chatPlan
	id, name string
	parse    bool // read the finished text for tool calls
	// harmony, for a gpt-oss (harmony) template, is what each choice has
	// sent of its reasoning and content (harmonyPiece); hold is the
	// stream's hold-back for stop strings.
	harmony []harmonySent
	hold    int
}

func (k *chatStream) chunk(cs ...chatChunkChoice) chatChunk {
	return chatChunk{ID: k.id, Object: "chat.completion.chunk", Created: k.s.created, Model: k.name, Choices: cs}
}

func (k *chatStream) piece(i int, o *output, delta string, from int) (any, bool) {
	if k.harmony != nil {
		return k.harmonyPiece(i, o, from)
	}
	req := &k.plan.req
	toks := o.Tokens[from:]
	wantToks := len(toks) > 0 && (k.plan.top >= 0 || req.ReturnTokenIDs)
	if delta == "" && !wantToks && o.Finish == "" {
		return nil, false
	}
	c := chatChunkChoice{Index: i, FinishReason: finishOf(o)}
	if k.parse && o.Finish != "" {
		msg, finish := k.s.assistantMessage(o, true, k.plan.req.Tools, fmt.Sprint(k.id, "-", i))
		c.FinishReason = &finish
		for n, tc := range msg.ToolCalls {
			c.Delta.ToolCalls = append(c.Delta.ToolCalls, chunkToolCall{Index: n, ToolCallWire: tc})
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
	if k.plan.top >= 0 && len(toks) > 0 {
		c.Logprobs = &endpoints.ChatLogprobs{Content: k.s.chatLogprobs(o, from, len(o.Tokens))}
	}
	if req.ReturnTokenIDs {
		c.TokenIDs = toks
	}
	return k.chunk(c), true
}

func (k *chatStream) usage(u *endpoints.Usage) any {
	c := k.chunk()
	c.Choices = []chatChunkChoice{}
	c.Usage = u
	return c
}
