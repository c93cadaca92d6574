package rubric

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeJudge is an OpenAI-compatible endpoint whose reply is chosen by the
// response under judgement ("say:<key>" picks judgeReplies[key], or the key
// itself when it is not in the table); it records the last request.
type fakeJudge struct {
	srv     *httptest.Server
	lastReq chatRequest
	lastKey string
	path    string
}

// judgeReplies holds replies that the response under judgement cannot carry
// itself, since the judge only sees it after StripThink.
var judgeReplies = map[string]string{"thinks": "<think>hmm, yes?</think>\nno"}

func newFakeJudge(t *testing.T) *fakeJudge {
	fj := &fakeJudge{}
	fj.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fj.path = req.URL.Path
		fj.lastKey = req.Header.Get("Authorization")
		if err := json.NewDecoder(req.Body).Decode(&fj.lastReq); err != nil || len(fj.lastReq.Messages) != 1 {
			http.Error(w, `{"error": {"message": "bad request"}}`, http.StatusBadRequest)
			return
		}
		prompt := fj.lastReq.Messages[0].Content
		_, reply, ok := strings.Cut(prompt, "say:")
		if !ok {
			http.Error(w, `{"error": {"message": "model not found"}}`, http.StatusNotFound)
			return
		}
		reply, _, _ = strings.Cut(reply, "|")
		if r, ok := judgeReplies[reply]; ok {
			reply = r
		}
		if reply == "nochoices" {
			w.Write([]byte(`{"choices": []}`))
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": reply}}},
		})
	}))
	t.Cleanup(fj.srv.Close)
	return fj
}

func TestJudgeVerdicts(t *testing.T) {
	fj := newFakeJudge(t)
	t.Setenv("GRPO_TEST_JUDGE_KEY", "sk-test")
	f, err := Judge(JudgeConfig{
		BaseURL:   fj.srv.URL + "/v1/",
		Model:     "judge-1",
		APIKeyEnv: "GRPO_TEST_JUDGE_KEY",
		Template:  "Q={question} A={answer} R={response}|",
	})
	if err != nil {
		t.Fatal(err)
	}
	for reply, want := range map[string]float64{
		"Yes.":    1,
		"**No**":  0,
		"thinks":  0,
		"0.7":     0.7,
		"correct": 1,
	} {
		r := SingleTurn("what is 6*7?", "<think>thinking</think>say:"+reply, "42 {response}")
		s, err := f(t.Context(), r)
		if err != nil || s.Value != want {
			t.Errorf("judge reply %q: score %v, %v; want %v", reply, s.Value, err, want)
		}
	}
	// The map above runs in random order; one more call fixes the last request.
	if _, err := f(t.Context(), SingleTurn("what is 6*7?", "say:correct", "42 {response}")); err != nil {
		t.Fatal(err)
	}
	if fj.path != "/v1/chat/completions" || fj.lastKey != "Bearer sk-test" || fj.lastReq.Model != "judge-1" {
		t.Errorf("request path %q key %q model %q", fj.path, fj.lastKey, fj.lastReq.Model)
	}
	// Placeholders are filled once: the answer's literal "{response}" stays.
	if got, want := fj.lastReq.Messages[0].Content, "Q=what is 6*7? A=42 {response} R=say:correct|"; got != want {
		t.Errorf("judge prompt %q, want %q", got, want)
	}
	for _, reply := range []string{"maybe", "7", "nochoices", ""} {
		_, err := f(t.Context(), SingleTurn("q", "say:"+reply, "a"))
		if err == nil {
			t.Errorf("judge reply %q accepted", reply)
		}
	}
	if _, err := f(t.Context(), SingleTurn("q", "no instruction", "a")); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("404 from the endpoint: error %v", err)
	}
}

func TestJudgeConfigErrors(t *testing.T) {
	t.Setenv("GRPO_TEST_UNSET_KEY", "")
	bad := map[string]JudgeConfig{
		"no url":      {Model: "m"},
		"no model":    {BaseURL: "http://127.0.0.1:1/v1"},
		"no response": {BaseURL: "http://127.0.0.1:1/v1", Model: "m", Template: "{question}"},
		"unset key":   {BaseURL: "http://127.0.0.1:1/v1", Model: "m", APIKeyEnv: "GRPO_TEST_UNSET_KEY"},
	}
	for what, cfg := range bad {
		if _, err := Judge(cfg); err == nil {
			t.Errorf("%s: Judge accepted %+v", what, cfg)
		}
	}
	if _, err := Judge(JudgeConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "m"}); err != nil {
		t.Errorf("default template rejected: %v", err)
	}
}
