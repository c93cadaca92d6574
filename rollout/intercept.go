package rollout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/chat"
)

// interceptor is the interception endpoint: a local OpenAI-compatible
// chat completions server (127.0.0.1, a port of its own) that agent
// programs call as their model. Each episode gets a path of its own,
// /e/<id>/v1, so the program's calls reach its episode, which answers
// them with the turns the driver generates. The paths are random, so
// that another local user cannot guess one and slip calls into an
// episode's samples. Only chat completions without streaming are served
// (tools included: they are rendered into the prompt and the turn's calls
// come back as tool_calls); a call it cannot serve is answered with an
// error the program sees.
type interceptor struct {
	srv  *http.Server
	addr string
	mu   sync.Mutex
	eps  map[string]*agentLink
}

// agentLink carries one episode's calls from the HTTP handler to the
// episode, one at a time.
type agentLink struct {
	calls chan *agentCall
	over  chan struct{} // closed when the episode ends: calls are refused
	once  sync.Once
}

// agentCall is one chat completion request waiting for its answer.
type agentCall struct {
	messages []chat.Message
	tools    []json.RawMessage
	answer   chan agentAnswer // buffered: answering never blocks
}

// agentAnswer is a generated turn for the call, or why there is none.
type agentAnswer struct {
	content, finish          string
	toolCalls                []chat.ToolCall // read from the turn when the call offered tools
	promptTokens, completion int
	err                      error
}

// end refuses the link's calls from now on.
func (l *agentLink) end() { l.once.Do(func() { close(l.over) }) }

// newInterceptor listens on a free port of 127.0.0.1 and serves.
func newInterceptor() (*interceptor, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("interception endpoint: listening on 127.0.0.1: %v", err)
	}
	ic := &interceptor{addr: ln.Addr().String(), eps: map[string]*agentLink{}}
	ic.srv = &http.Server{Handler: http.HandlerFunc(ic.serve), ReadHeaderTimeout: 30 * time.Second}
	go ic.srv.Serve(ln)
	return ic, nil
}

// open makes a path for one episode: its base URL (OPENAI_BASE_URL) and
// the link its calls arrive on.
func (ic *interceptor) open() (string, *agentLink) {
	var b [12]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	ic.mu.Lock()
	defer ic.mu.Unlock()
	l := &agentLink{calls: make(chan *agentCall), over: make(chan struct{})}
	ic.eps[id] = l
	return "http://" + ic.addr + "/e/" + id + "/v1", l
}

// close stops serving; calls in flight are refused by their links.
func (ic *interceptor) close() {
	ic.mu.Lock()
	for _, l := range ic.eps {
		l.end()
	}
	ic.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ic.srv.Shutdown(ctx)
}

func (ic *interceptor) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/e/")
	id, route, _ := strings.Cut(rest, "/")
	ic.mu.Lock()
	l := ic.eps[id]
	ic.mu.Unlock()
	switch {
	case !ok || l == nil:
		apiError(w, http.StatusNotFound, "no episode at "+r.URL.Path+"; use the OPENAI_BASE_URL the program was given")
	case route == "v1/models" && r.Method == http.MethodGet:
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": interceptModel, "object": "model", "owned_by": "grpo"}}})
	case route == "v1/chat/completions" && r.Method == http.MethodPost:
		ic.chat(w, r, l)
	default:
		apiError(w, http.StatusNotFound, r.Method+" "+route+" is not served; the interception endpoint serves POST chat/completions and GET models")
	}
}

// interceptModel is the model name the endpoint reports; a program may
// ask for any.
const interceptModel = "policy"

func (ic *interceptor) chat(w http.ResponseWriter, r *http.Request, l *agentLink) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		apiError(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	c, model, err := decodeAgentRequest(body)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	select {
	case l.calls <- c:
	case <-l.over:
		apiError(w, http.StatusConflict, "the episode is over (max turns, the context, or its timeout); the program should exit")
		return
	case <-r.Context().Done():
		return
	}
	var a agentAnswer
	select {
	case a = <-c.answer:
	case <-l.over:
		a.err = errors.New("the episode is over (max turns, the context, or its timeout); the program should exit")
	case <-r.Context().Done():
		return
	}
	if a.err != nil {
		apiError(w, http.StatusConflict, a.err.Error())
		return
	}
	if model == "" {
		model = interceptModel
	}
	writeJSON(w, map[string]any{
		"id": "chatcmpl-grpo", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": answerMessage(a), "finish_reason": a.finish}},
		"usage":   map[string]int{"prompt_tokens": a.promptTokens, "completion_tokens": a.completion, "total_tokens": a.promptTokens + a.completion},
	})
}

// answerMessage is the answer as an OpenAI assistant message: its text
// and, when the model called tools, the calls, their arguments as a JSON
// string as OpenAI writes them.
func answerMessage(a agentAnswer) map[string]any {
	m := map[string]any{"role": "assistant", "content": a.content}
	if len(a.toolCalls) == 0 {
		return m
	}
	var calls []any
	for i, c := range a.toolCalls {
		calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
			"function": map[string]any{"name": c.Function.Name, "arguments": string(c.Function.Arguments)}})
	}
	m["tool_calls"] = calls
	return m
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// apiError answers in OpenAI's error shape, which clients print.
func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}
