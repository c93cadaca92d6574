package serve

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/sampler"
)

// FuzzRequestDecoder feeds arbitrary bodies to the chat and completions
// decoders and planners: none may panic, an error names no Go type, and a
// request they accept must have valid sampling parameters for each of its
// choices (no more than the slots) and a prompt that fits.
func FuzzRequestDecoder(f *testing.F) {
	for _, seed := range []string{
		`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"temperature":0.5,"n":2,"stop":"x","seed":-3}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"logprobs":true,"top_logprobs":2,"tools":[{"type":"function","function":{"name":"f"}}]}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}],"chat_template_kwargs":{"enable_thinking":false}}`,
		`{"prompt":[1,2,3],"logprobs":1,"echo":true,"max_tokens":4,"stop":["a","b"],"seed":18446744073709551615}`,
		`{"prompt":"abc","top_k":-1,"min_p":0.1,"ignore_eos":true,"stop_token_ids":[5]}`,
		`{"prompt":"abc","n":1000000000,"logprobs":-1,"max_tokens":"x"}`,
		`{"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":-1,"stop":["a","b"]}`,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	writeTestModel(f, dir)
	fx := newFixtureStopped(f, dir, Config{Slots: 2, MaxLen: 64})
	s := fx.srv
	f.Fuzz(func(t *testing.T, body []byte) {
		var cr chatRequest
		e := decode(body, &cr)
		if e == nil {
			var plan *chatPlan
			if plan, e = s.planChat(&cr); e == nil {
				checkPlan(t, plan.prompt, plan.params, cr.N)
			}
		}
		checkError(t, "chat", e)
		var pr completionRequest
		e = decode(body, &pr)
		if e == nil {
			var plan *completionPlan
			if plan, e = s.planCompletion(&pr); e == nil && len(plan.prompt) > 0 { // submit refuses an empty token list
				checkPlan(t, plan.prompt, plan.params, pr.N)
			}
		}
		checkError(t, "completions", e)
	})
}

// checkError: a refusal is a 400 whose message names no Go type or field.
func checkError(t *testing.T, what string, e *apiError) {
	t.Helper()
	if e != nil && (e.status != 400 || e.message == "" || strings.Contains(e.message, "serve.") || strings.Contains(e.message+e.param, "Fields") || strings.Contains(e.message, "Overrides")) {
		t.Fatalf("%s: error %+v", what, e)
	}
}

// FuzzLoRARequest feeds arbitrary bodies to the load/unload_lora_adapter
// decoder and checks: no panic, and a name it accepts is printable and
// short, a path without NUL.
func FuzzLoRARequest(f *testing.F) {
	for _, seed := range []string{
		`{"lora_name":"rt","lora_path":"/tmp/x"}`, `{"lora_name":"rt","lora_path":"/tmp/x","load_inplace":true}`,
		`{"lora_name":"a\nb","lora_path":"x"}`, `{"lora_name":"tiny","lora_path":"x"}`, `{"lora_name":"\u0000"}`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	writeTestModel(f, dir)
	s := newFixtureStopped(f, dir, Config{Slots: 1, MaxLen: 64}).srv
	f.Fuzz(func(t *testing.T, body []byte) {
		var req loraRequest
		e := decode(body, &req)
		if e == nil {
			e = s.checkLoRARequest(&req, true)
			if e == nil && (!printable(req.Name) || len(req.Name) > maxNameBytes || req.Name == "tiny" || strings.ContainsRune(req.Path, 0)) {
				t.Fatalf("accepted %+v", req)
			}
		}
		checkError(t, "lora", e)
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
	if len(ps) != want || want > 2 {
		t.Fatalf("%d choices, n = %d, on 2 slots", len(ps), want)
	}
	if len(prompt) >= 64 {
		t.Fatalf("accepted a prompt of %d tokens on a 64-token server", len(prompt))
	}
	for i := range ps {
		if err := ps[i].Validate(); err != nil {
			t.Fatalf("choice %d: accepted invalid params: %v", i, err)
		}
	}
}
