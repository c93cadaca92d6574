package serve

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/sampler"
)

// completionPlan is a validated completions request.
type completionPlan struct {
	req    completionRequest
	prompt []int32
	params []sampler.Params
	top    int // legacy logprobs: alternatives per token; -1 for none
}

// promptIDs reads the prompt: a string (tokenized with the model's special
// tokens, as vLLM does), a list of token ids, or a one-element list of
// either. Batches of several prompts are refused: send one request each.
func (s *Server) promptIDs(raw json.RawMessage) ([]int32, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt", "prompt is missing: give a string or a list of token ids")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return s.encodePrompt(text)
	}
	var ids []int32
	if json.Unmarshal(raw, &ids) == nil {
		return ids, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil && len(texts) == 1 {
		return s.encodePrompt(texts[0])
	}
	var idLists [][]int32
	if json.Unmarshal(raw, &idLists) == nil && len(idLists) == 1 {
		return idLists[0], nil
	}
	if len(texts) > 1 || len(idLists) > 1 {
		return nil, badRequest("prompt", "grpo serve takes one prompt per request; send the prompts as separate requests (they are batched on the server anyway)")
	}
	return nil, badRequest("prompt", "prompt: want a string, a list of token ids, or a one-element list of either")
}

// encodePrompt tokenizes a text prompt that can fit (checkPromptText).
func (s *Server) encodePrompt(text string) ([]int32, *apiError) {
	if e := s.checkPromptText(text, "prompt"); e != nil {
		return nil, e
	}
	return s.tok.EncodeWithSpecialTokens(text), nil
}

func (s *Server) planCompletion(req *completionRequest) (*completionPlan, *apiError) {
	prompt, e := s.promptIDs(req.Prompt)
	if e != nil {
		return nil, e
	}
	if req.Suffix != nil && *req.Suffix != "" {
		return nil, badRequest("suffix", "suffix is not supported by grpo serve")
	}
	top := -1
	if req.Logprobs != nil {
		if top = *req.Logprobs; top < 0 {
			return nil, badRequest("logprobs", "logprobs = %d: want 0 to %d", top, sampler.MaxTopLogprobs)
		}
	}
	maxTokens := req.MaxTokens
	if maxTokens == nil {
		sixteen := 16 // OpenAI's default for the completions API
		maxTokens = &sixteen
	}
	params, e := req.params(maxTokens, max(0, top), s.stops, s.limits())
	if e != nil {
		if e.param == "top_logprobs" {
			e.param = "logprobs"
		}
		return nil, e
	}
	return &completionPlan{req: *req, prompt: prompt, params: params, top: top}, nil
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	plan, e := s.planCompletion(&req)
	if e != nil {
		writeError(w, e)
		return
	}
	ad, e := s.resolveModel(req.Model)
	if e != nil {
		writeError(w, e)
		return
	}
	promptTop := -1
	if req.Echo && plan.top >= 0 {
		promptTop = plan.top
	}
	j, e := s.submit(r.Context(), ad, plan.prompt, "prompt", plan.params, promptTop, req.Stream)
	if e != nil {
		writeError(w, e)
		return
	}
	name := s.responseModel(req.Model)
	id := s.newID("cmpl")
	if req.Stream {
		s.streamCompletion(w, r, j, plan, id, name)
		return
	}
	outs, ok := awaitOutputs(w, r, j)
	if !ok {
		return
	}
	resp := endpoints.CompletionResponse{ID: id, Object: "text_completion", Created: s.created, Model: name}
	pt, ct := usageOf(plan.prompt, outs)
	countTokens(r, pt, ct)
	resp.Usage = &endpoints.Usage{PromptTokens: pt, CompletionTokens: ct, TotalTokens: pt + ct}
	for i := range outs {
		o := &outs[i]
		c := endpoints.CompletionChoice{Index: i, FinishReason: o.Finish}
		lp := &endpoints.CompletionLogprobs{Tokens: []string{}, TokenLogprobs: []*float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
		offset := 0
		if req.Echo {
			c.Text = s.tok.Decode(plan.prompt)
			offset = s.appendPromptLogprobs(lp, j, plan.prompt)
		}
		c.Text += s.visible(o, 0)
		if plan.top >= 0 {
			s.appendLogprobs(lp, o, 0, len(o.Tokens), offset)
			c.Logprobs = lp
		}
		if req.ReturnTokenIDs {
			c.PromptTokenIDs, c.TokenIDs = plan.prompt, o.Tokens
		}
		resp.Choices = append(resp.Choices, c)
	}
	writeJSON(w, http.StatusOK, resp)
}

// appendPromptLogprobs adds the echoed prompt's entries (the first token
// has no log-prob: nothing precedes it) and returns the text offset after
// the prompt.
func (s *Server) appendPromptLogprobs(lp *endpoints.CompletionLogprobs, j *job, prompt []int32) int {
	j.mu.Lock()
	lps, tops := j.promptLP, j.promptTL
	j.mu.Unlock()
	offset := 0
	for k, id := range prompt {
		t := s.tokenText(id)
		lp.Tokens = append(lp.Tokens, t)
		lp.TextOffset = append(lp.TextOffset, offset)
		offset += len(t)
		if k == 0 || k-1 >= len(lps) {
			lp.TokenLogprobs = append(lp.TokenLogprobs, nil)
			lp.TopLogprobs = append(lp.TopLogprobs, nil)
			continue
		}
		v := float64(lps[k-1])
		lp.TokenLogprobs = append(lp.TokenLogprobs, &v)
		m := map[string]float64{t: v}
		if k-1 < len(tops) {
			for _, alt := range tops[k-1] {
				m[s.tokenText(alt.ID)] = float64(alt.Logprob)
			}
		}
		lp.TopLogprobs = append(lp.TopLogprobs, m)
	}
	return offset
}

// appendLogprobs adds the entries of o's tokens [from, to), text offsets
// counted from offset; each top_logprobs map holds the alternatives and
// the sampled token itself, as vLLM's do.
func (s *Server) appendLogprobs(lp *endpoints.CompletionLogprobs, o *output, from, to, offset int) int {
	for k := from; k < to; k++ {
		t := s.tokenText(o.Tokens[k])
		v := float64(o.Logprobs[k])
		lp.Tokens = append(lp.Tokens, t)
		lp.TokenLogprobs = append(lp.TokenLogprobs, &v)
		lp.TextOffset = append(lp.TextOffset, offset)
		offset += len(t)
		m := map[string]float64{}
		if k < len(o.Top) {
			for _, alt := range o.Top[k] {
				m[s.tokenText(alt.ID)] = float64(alt.Logprob)
			}
		}
		m[t] = v
		lp.TopLogprobs = append(lp.TopLogprobs, m)
	}
	return offset
}

// completionChunk is one event of a streamed completion.
type completionChunk struct {
	ID      string                  `json:"id"`
	Object  string                  `json:"object"`
	Created int64                   `json:"created"`
	Model   string                  `json:"model"`
	Choices []completionChunkChoice `json:"choices"`
	Usage   *endpoints.Usage        `json:"usage,omitempty"`
}

// completionChunkChoice is a choice's piece; finish_reason is null until
// its last piece.
type completionChunkChoice struct {
	Index          int                           `json:"index"`
	Text           string                        `json:"text"`
	Logprobs       *endpoints.CompletionLogprobs `json:"logprobs"`
	FinishReason   *string                       `json:"finish_reason"`
	PromptTokenIDs []int32                       `json:"prompt_token_ids,omitempty"`
	TokenIDs       []int32                       `json:"token_ids,omitempty"`
}

// streamCompletion sends text deltas per choice as they grow (the echoed
// prompt first), a finish reason with each choice's last piece, an
// optional usage chunk and [DONE].
func (s *Server) streamCompletion(w http.ResponseWriter, r *http.Request, j *job, plan *completionPlan, id, name string) {
	st := newSSE(w)
	n := len(plan.params)
	kind := &completionStream{s: s, plan: plan, j: j, id: id, name: name, first: make([]bool, n), offsets: make([]int, n)}
	s.streamChoices(st, r, j, holdBack(plan.req.Stop), plan.req.includeUsage(), kind)
}

// completionStream shapes a completion's stream events.
type completionStream struct {
	s        *Server
	plan     *completionPlan
	j        *job
	id, name string
	// first[i]: choice i's first piece (with the echoed prompt) is made;
	// offsets[i] is the text offset its next log-prob entry starts at.
	first   []bool
	offsets []int
}

func (k *completionStream) piece(i int, o *output, delta string, from int) (any, bool) {
	req := &k.plan.req
	c := completionChunkChoice{Index: i, FinishReason: finishOf(o)}
	lp := &endpoints.CompletionLogprobs{Tokens: []string{}, TokenLogprobs: []*float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	toks := o.Tokens[from:]
	if !k.first[i] && !req.Echo && delta == "" && len(toks) == 0 && o.Finish == "" {
		// Nothing to send yet; the first piece sent carries the prompt's
		// ids, so first[i] waits for it.
		return nil, false
	}
	if !k.first[i] {
		k.first[i] = true
		if req.ReturnTokenIDs {
			c.PromptTokenIDs = k.plan.prompt
		}
		if req.Echo {
			c.Text = k.s.tok.Decode(k.plan.prompt)
			k.offsets[i] = k.s.appendPromptLogprobs(lp, k.j, k.plan.prompt)
		}
	}
	c.Text += delta
	if c.Text == "" && len(toks) == 0 && o.Finish == "" && c.PromptTokenIDs == nil {
		return nil, false
	}
	if k.plan.top >= 0 {
		k.offsets[i] = k.s.appendLogprobs(lp, o, from, len(o.Tokens), k.offsets[i])
		c.Logprobs = lp
	}
	if req.ReturnTokenIDs {
		c.TokenIDs = append([]int32{}, toks...)
	}
	return k.chunk(c), true
}

func (k *completionStream) chunk(cs ...completionChunkChoice) completionChunk {
	return completionChunk{ID: k.id, Object: "text_completion", Created: k.s.created, Model: k.name, Choices: cs}
}

func (k *completionStream) usage(u *endpoints.Usage) any {
	c := k.chunk()
	c.Choices = []completionChunkChoice{}
	c.Usage = u
	return c
}
