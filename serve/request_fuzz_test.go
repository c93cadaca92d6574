package serve

import (
	"bytes"
	"testing"

	"github.com/grpo-dev/grpo/sampler"
)

// FuzzRequestDecoder feeds arbitrary bodies to the chat and completions
// decoders and planners: none may panic, and a request they accept must
// have valid sampling parameters for each of its choices and a prompt.
func FuzzRequestDecoder(f *testing.F) {
	for _, seed := range []string{
		`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"temperature":0.5,"n":2,"stop":"x","seed":-3}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"logprobs":true,"top_logprobs":2,"tools":[{"type":"function","function":{"name":"f"}}]}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}],"chat_template_kwargs":{"enable_thinking":false}}`,
		`{"prompt":[1,2,3],"logprobs":1,"echo":true,"max_tokens":4,"stop":["a","b"],"seed":18446744073709551615}`,
		`{"prompt":"abc","top_k":-1,"min_p":0.1,"ignore_eos":true,"stop_token_ids":[5]}`,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	writeTestModel(f, dir)
	fx := newFixtureStopped(f, dir, Config{Slots: 2, MaxLen: 64})
	s := fx.srv
	f.Fuzz(func(t *testing.T, body []byte) {
		var cr chatRequest
		if e := decode(bytes.NewReader(body), &cr); e == nil {
			if plan, e := s.planChat(&cr); e == nil {
				checkPlan(t, plan.prompt, plan.params, cr.N)
			} else if e.status != 400 || e.message == "" {
				t.Fatalf("chat: error %+v", e)
			}
		}
		var pr completionRequest
		if e := decode(bytes.NewReader(body), &pr); e == nil {
			if plan, e := s.planCompletion(&pr); e == nil {
				if len(plan.prompt) == 0 {
					return // submit refuses an empty token list with a 400
				}
				checkPlan(t, plan.prompt, plan.params, pr.N)
			} else if e.status != 400 || e.message == "" {
				t.Fatalf("completions: error %+v", e)
			}
		}
	})
}

func checkPlan(t *testing.T, prompt []int32, ps []sampler.Params, n *int) {
	t.Helper()
	if len(prompt) == 0 {
		t.Fatal("accepted with an empty prompt")
	}
	want := 1
	if n != nil {
		want = *n
	}
	if len(ps) != want {
		t.Fatalf("%d choices, n = %d", len(ps), want)
	}
	for i := range ps {
		if err := ps[i].Validate(); err != nil {
			t.Fatalf("choice %d: accepted invalid params: %v", i, err)
		}
	}
}
