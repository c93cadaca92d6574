package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// fakeServer answers /v1/models with "base" and each other request with
// reply(the request body), which returns
// the status and the JSON body.
func fakeServer(t *testing.T, reply func(req map[string]any) (int, string)) *endpoints.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object": "list", "data": [{"id": "base"}]}`)
			return
		}
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		status, body := reply(req)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := endpoints.New([]endpoints.Endpoint{{ID: "fake", Model: "base", URL: srv.URL + "/v1"}}, endpoints.Options{MaxRetries: -1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func completion(ids []int, lps []float64, finish string) string {
	b, _ := json.Marshal(map[string]any{"choices": []map[string]any{{"index": 0, "text": "", "finish_reason": finish, "token_ids": ids,
		"logprobs": map[string]any{"token_logprobs": lps}}}})
	return string(b)
}

// TestServerEngineRequestsAndFailures: a turn is a completions request on
// the prompt's token ids with the rollout's seed, max_tokens, logprobs 0,
// return_token_ids and the stop tokens; the reply's ids and log-probs are
// the trajectory's. A request the server refuses (400) fails its episode
// only; a reply without token ids, or an unknown model (404), stops Play.
func TestServerEngineRequestsAndFailures(t *testing.T) {
	tok := qwen3Tokenizer(t)
	mc := &model.Config{VocabSize: tok.VocabSize(), MaxPositions: 4096}
	exs := []env.Example{{ID: "a", Prompt: []chat.Message{{Role: "user", Content: "ok"}}}, {ID: "b", Prompt: []chat.Message{{Role: "user", Content: "refuse"}}}}
	var requests atomic.Int32
	c := fakeServer(t, func(req map[string]any) (int, string) {
		requests.Add(1)
		text := tok.Decode(toIDs(req["prompt"]))
		switch {
		case strings.Contains(text, "refuse"):
			return 400, `{"error": {"message": "prompt too long", "type": "BadRequestError"}}`
		case req["model"] != "base" || req["logprobs"] != 0.0 || req["return_token_ids"] != true || req["max_tokens"] != 5.0 || req["seed"] == nil || len(req["stop_token_ids"].([]any)) == 0:
			return 400, fmt.Sprintf(`{"error": {"message": "unexpected request %v"}}`, req)
		}
		return 200, completion([]int{11, 12, int(tok.EOS()[0])}, []float64{-0.5, -1.25, -0.125}, "stop")
	})
	eng, err := NewServerEngine(context.Background(), c, ServerOptions{Model: "base", AdapterDir: t.TempDir(), Tok: tok, Config: mc})
	if err != nil {
		t.Fatal(err)
	}
	p := rolloutParams()
	trajs, err := eng.Play(context.Background(), echoEnv{turns: 1}, exs, 2, p, 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := trajs[0]
	if len(a.Errors) > 0 || fmt.Sprint(a.Tokens) != fmt.Sprint([]int32{11, 12, tok.EOS()[0]}) || fmt.Sprint(a.Logprobs) != "[-0.5 -1.25 -0.125]" || a.FinishReason != "stop" || a.Truncated {
		t.Errorf("served episode: %+v", a)
	}
	b := trajs[2]
	if len(b.Errors) != 1 || !strings.Contains(b.Errors[0], "turn 1: generate: endpoint fake") || !strings.Contains(b.Errors[0], "HTTP 400") || b.Reward != 0 {
		t.Errorf("refused episode: %v", b.Errors)
	}
	if n := requests.Load(); n != 4 {
		t.Errorf("%d requests for 4 single-turn episodes", n)
	}

	noIDs := fakeServer(t, func(map[string]any) (int, string) { return 200, completion(nil, nil, "stop") })
	eng, _ = NewServerEngine(context.Background(), noIDs, ServerOptions{Model: "base", AdapterDir: t.TempDir(), Tok: tok, Config: mc})
	if _, err := eng.Play(context.Background(), echoEnv{turns: 1}, exs, 2, p, 7, Options{}); err == nil || !strings.Contains(err.Error(), "returned no token ids") {
		t.Errorf("reply without token ids: %v", err)
	}
	// A log-prob above 0 (issue 27) is the server's fault, named, and
	// stops Play: it would train on a broken behaviour policy.
	positive := fakeServer(t, func(map[string]any) (int, string) {
		return 200, completion([]int{11, 12}, []float64{-0.5, 0.75}, "length")
	})
	eng, _ = NewServerEngine(context.Background(), positive, ServerOptions{Model: "base", AdapterDir: t.TempDir(), Tok: tok, Config: mc})
	if _, err := eng.Play(context.Background(), echoEnv{turns: 1}, exs, 2, p, 7, Options{}); err == nil || !strings.Contains(err.Error(), "returned log-prob 0.75 for token 1") || !strings.Contains(err.Error(), "endpoint fake (http://127.0.0.1:") {
		t.Errorf("positive log-prob: %v", err)
	}
	// A log-prob missing or extra is the server's fault too: the loss
	// would pair tokens with another token's log-prob.
	for _, lps := range [][]float64{{-0.5}, {-0.5, -0.25, -0.125}} {
		short := fakeServer(t, func(map[string]any) (int, string) { return 200, completion([]int{11, 12}, lps, "length") })
		eng, _ = NewServerEngine(context.Background(), short, ServerOptions{Model: "base", AdapterDir: t.TempDir(), Tok: tok, Config: mc})
		want := fmt.Sprintf("/v1) returned 2 token ids and %d log-probs", len(lps))
		if _, err := eng.Play(context.Background(), echoEnv{turns: 1}, exs, 2, p, 7, Options{}); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "endpoint fake (http://127.0.0.1:") {
			t.Errorf("%d log-probs for 2 tokens: %v", len(lps), err)
		}
	}
	unknown := fakeServer(t, func(map[string]any) (int, string) {
		return 404, `{"error": {"message": "The model step-3 does not exist."}}`
	})
	eng, _ = NewServerEngine(context.Background(), unknown, ServerOptions{Model: "base", AdapterDir: t.TempDir(), Tok: tok, Config: mc})
	if _, err := eng.Play(context.Background(), echoEnv{turns: 1}, exs, 2, p, 7, Options{}); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("unknown model: %v", err)
	}
	if _, err := NewServerEngine(context.Background(), unknown, ServerOptions{Model: "other", AdapterDir: t.TempDir(), Tok: tok, Config: mc}); err == nil || !strings.Contains(err.Error(), `does not serve model "other"`) {
		t.Errorf("base model not served: %v", err)
	}
}

func toIDs(v any) []int32 {
	var ids []int32
	for _, x := range v.([]any) {
		ids = append(ids, int32(x.(float64)))
	}
	return ids
}

// TestSetPolicyOnStoppedServer: a server that went away between the check
// and the first adapter load is named as not running, with its URL, and
// the advice is to start it — not vLLM's LoRA flags, which a server that
// never answered cannot be missing (issue 27).
func TestSetPolicyOnStoppedServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object": "list", "data": [{"id": "base"}]}`)
	}))
	c, err := endpoints.New([]endpoints.Endpoint{{ID: "fake", Model: "base", URL: srv.URL + "/v1"}}, endpoints.Options{MaxRetries: -1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &model.Config{ModelType: "qwen3", HiddenSize: 16, IntermediateSize: 32, NumLayers: 1, NumHeads: 2,
		NumKVHeads: 1, HeadDim: 8, VocabSize: 32, RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
	m := model.NewRandom(cfg, cpu.New(), 1)
	defer m.Free()
	a, err := lora.New(m, lora.Config{Rank: 2, Alpha: 4, TargetModules: []string{"q_proj"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := NewServerEngine(context.Background(), c, ServerOptions{Model: "base", AdapterDir: t.TempDir(), Tok: qwen3Tokenizer(t), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	err = eng.SetPolicy(context.Background(), 0, a)
	if err == nil || !strings.Contains(err.Error(), "connection refused at "+srv.URL+"/v1: is the server running?") ||
		strings.Contains(err.Error(), "--enable-lora") || !strings.Contains(err.Error(), "start the server") {
		t.Errorf("SetPolicy on a stopped server: %v", err)
	}
}
