package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/sampler"
)

// samplingFields are the request keys shared by chat and completions,
// OpenAI's and vLLM's extras. Pointers tell "unset" from zero.
type samplingFields struct {
	Model string `json:"model"`
	N     *int   `json:"n"`
	// Overrides are temperature, top_p, top_k, min_p, max_tokens and stop
	// (a string or a list); params lays them over sampler.DefaultParams.
	sampler.Overrides
	Seed          *seedValue `json:"seed"`
	Stream        bool       `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	FrequencyPenalty  *float64        `json:"frequency_penalty"`
	PresencePenalty   *float64        `json:"presence_penalty"`
	RepetitionPenalty *float64        `json:"repetition_penalty"`
	LogitBias         json.RawMessage `json:"logit_bias"`
	BestOf            *int            `json:"best_of"`
	// vLLM extras
	ReturnTokenIDs bool    `json:"return_token_ids"`
	IgnoreEOS      bool    `json:"ignore_eos"`
	StopTokenIDs   []int32 `json:"stop_token_ids"`
}

// chatRequest is a POST /v1/chat/completions body.
type chatRequest struct {
	samplingFields
	Messages            []wireMessage     `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	Logprobs            bool              `json:"logprobs"`
	TopLogprobs         *int              `json:"top_logprobs"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	ResponseFormat      *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	// ReasoningEffort is the chat template's reasoning_effort (gpt-oss's
	// harmony template reads it), as train, eval and GEPA pass Lab's key.
	ReasoningEffort string `json:"reasoning_effort"`
	// vLLM extras
	ChatTemplateKwargs  map[string]any `json:"chat_template_kwargs"`
	AddGenerationPrompt *bool          `json:"add_generation_prompt"`
}

// completionRequest is a POST /v1/completions body.
type completionRequest struct {
	samplingFields
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Echo     bool            `json:"echo"`
	Suffix   *string         `json:"suffix"`
}

// wireMessage is a chat message as clients send it: content is a string,
// a list of text parts, or null (an assistant turn of tool calls).
type wireMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name"`
	ToolCallID       string          `json:"tool_call_id"`
	ToolCalls        []chat.ToolCall `json:"tool_calls"`
	ReasoningContent *string         `json:"reasoning_content"`
}

// seedValue is an integer seed: any int64 or uint64 (a negative seed is
// its two's complement), so a uint64 per-rollout seed passes exactly.
type seedValue uint64

func (s *seedValue) UnmarshalJSON(b []byte) error {
	t := strings.TrimSpace(string(b))
	if u, err := strconv.ParseUint(t, 10, 64); err == nil {
		*s = seedValue(u)
		return nil
	}
	if i, err := strconv.ParseInt(t, 10, 64); err == nil {
		*s = seedValue(uint64(i))
		return nil
	}
	return badRequest("seed", "seed: want an integer")
}

// decode reads a JSON body into v, turning decoder errors into 400s that
// name the request's key and the JSON it wants, never a Go type or field.
func decode(data []byte, v any) *apiError {
	// Unmarshal reads data in place (a Decoder would copy it) and refuses
	// anything after the first value.
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		var ae *apiError
		switch {
		case errors.As(err, &ae): // from a field's own UnmarshalJSON
			return ae
		case errors.As(err, &te) && te.Field == "":
			return badRequest("", "the request body: want %s, got a JSON %s", jsonKind(te.Type), te.Value)
		case errors.As(err, &te):
			field := keyPath(te.Field)
			return badRequest(field, "%s: want %s, got a JSON %s", field, jsonKind(te.Type), te.Value)
		}
		return badRequest("", "the request body is not a JSON object: %v", err)
	}
	return nil
}

// keyPath is a decoder error's field path without the names of embedded
// structs (samplingFields, sampler.Overrides), which the decoder puts in
// it: the request's keys are all in lower snake case.
func keyPath(field string) string {
	parts := strings.Split(field, ".")
	keep := parts[:0]
	for _, p := range parts {
		if p != "" && !embeddedNames[p] {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ".")
}

// embeddedNames are the Go names of the structs embedded in the request
// types.
var embeddedNames = map[string]bool{"samplingFields": true, "Overrides": true}

// jsonKind names what a Go type accepts in JSON terms.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

// text returns a message's content as text.
func (m *wireMessage) text(i int) (string, *apiError) {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content: want a string or a list of content parts", i)
	}
	var b strings.Builder
	for k, p := range parts {
		if p.Type != "text" {
			return "", badRequest(fmt.Sprintf("messages[%d].content[%d].type", i, k), "messages[%d].content[%d]: type %q is not supported; grpo serve takes text parts only", i, k, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// messages converts the request's messages for the chat template.
func (r *chatRequest) messages() ([]chat.Message, *apiError) {
	if len(r.Messages) == 0 {
		return nil, badRequest("messages", "messages is empty: give at least one message")
	}
	out := make([]chat.Message, len(r.Messages))
	for i := range r.Messages {
		m := &r.Messages[i]
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role = %q: want system, developer, user, assistant or tool", i, m.Role)
		}
		text, err := m.text(i)
		if err != nil {
			return nil, err
		}
		role := m.Role
		if role == "developer" { // OpenAI's newer name for system
			role = "system"
		}
		calls := append([]chat.ToolCall(nil), m.ToolCalls...)
		out[i] = chat.Message{Role: role, Content: text, Name: m.Name, ToolCallID: m.ToolCallID, ToolCalls: calls, ReasoningContent: m.ReasoningContent}
		for k := range calls {
			args, err := argumentsValue(m.ToolCalls[k].Function.Arguments)
			if err != nil {
				field := fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, k)
				return nil, badRequest(field, "%s: %v", field, err)
			}
			calls[k].Function.Arguments = args
		}
	}
	return out, nil
}

// limits are what a request's fields are checked against.
type limits struct{ slots, vocab int }

func (s *Server) limits() limits {
	return limits{slots: s.engine.Slots(), vocab: s.m.Config.VocabSize}
}

// argumentsValue is a call's arguments as the chat template gets them.
// Clients send them as OpenAI does, a string of JSON; like vLLM, the server
// decodes that string (and makes a missing or empty one {}), since
// templates iterate the arguments (Qwen3.5's writes one <parameter=…> per
// key) or print them with tojson.
func argumentsValue(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return raw, nil // already a JSON value
	}
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("%q is not JSON; send the arguments as a string of JSON, as OpenAI does", clip(s))
	}
	return json.RawMessage(s), nil
}

func clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

// params builds the per-choice sampling parameters: the request's
// settings (max_tokens as the endpoint reads it) over
// sampler.DefaultParams, checked by Params.Validate (whose
// messages name the key), with stop tokens and seeds.
//
// Every field is checked against the server's limits before the choices
// are allocated: n above the slots is refused here, not after making n
// parameter sets (n = 10⁹ would exhaust memory).
func (f *samplingFields) params(maxTokens *int, topLogprobs int, stopTokens []int32, lim limits) ([]sampler.Params, *apiError) {
	p := sampler.DefaultParams()
	n := 1
	if f.N != nil {
		n = *f.N
	}
	switch {
	case n < 1:
		return nil, badRequest("n", "n = %d: want at least 1", n)
	case n > lim.slots:
		return nil, badRequest("n", "n = %d exceeds the server's %d slots (grpo serve --slots)", n, lim.slots)
	case f.BestOf != nil && *f.BestOf != n:
		return nil, badRequest("best_of", "best_of is not supported (it must equal n)")
	}
	if e := checkStops(f.Stop, f.StopTokenIDs, lim.vocab); e != nil {
		return nil, e
	}
	for _, pen := range []struct {
		key string
		v   *float64
		off float64
	}{{"frequency_penalty", f.FrequencyPenalty, 0}, {"presence_penalty", f.PresencePenalty, 0}, {"repetition_penalty", f.RepetitionPenalty, 1}} {
		if pen.v != nil && *pen.v != pen.off {
			return nil, badRequest(pen.key, "%s is not supported by grpo serve; leave it at %v", pen.key, pen.off)
		}
	}
	if b := bytes.TrimSpace(f.LogitBias); len(b) > 0 && string(b) != "null" && string(b) != "{}" {
		return nil, badRequest("logit_bias", "logit_bias is not supported by grpo serve")
	}
	if maxTokens != nil && *maxTokens < 1 {
		return nil, badRequest("max_tokens", "max_tokens = %d: want at least 1", *maxTokens)
	}
	o := f.Overrides
	o.MaxTokens = maxTokens
	o.Apply(&p)
	p.TopLogprobs = topLogprobs
	if err := p.Validate(); err != nil {
		param := ""
		var pe *kernels.ParamError
		if errors.As(err, &pe) {
			param = pe.Key
		}
		return nil, badRequest(param, "%v", err)
	}
	seed := rand.Uint64() // no seed: a fresh stream per request
	if f.Seed != nil {
		seed = uint64(*f.Seed)
	}
	if !f.IgnoreEOS {
		p.StopTokens = append(p.StopTokens, stopTokens...)
	}
	p.StopTokens = append(p.StopTokens, f.StopTokenIDs...)
	out := make([]sampler.Params, n)
	for i := range out {
		out[i] = p
		out[i].Seed = seed
		if i > 0 {
			out[i].Seed = sampler.DeriveSeed(seed, uint64(i))
		}
	}
	return out, nil
}
