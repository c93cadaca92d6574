package serve

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/sampler"
)

// One fuzz target per request decoder of the API, so `go test -fuzz`
// spends its time on each body type alone (scripts/fuzz-all.sh runs them
// all). Their seeds are in testdata/fuzz/<target>/: requests as clients
// send them, and the attack's (issue 27) — absurd n, negative logprobs,
// wrong JSON kinds, control characters in names.

// fuzzServer is a server on the tiny model with 2 slots of 64 tokens
// whose scheduler is not running: the fuzz targets decode and plan
// requests, and never generate.
func fuzzServer(f *testing.F) *Server {
	dir := f.TempDir()
	writeTestModel(f, dir)
	return newFixtureStopped(f, dir, Config{Slots: 2, MaxLen: 64}).srv
}

// FuzzChatRequest feeds arbitrary bodies to the chat completions decoder
// and planner: no panic, an error names no Go type, and a request they
// accept has valid sampling parameters for each of its choices (no more
// than the slots) and a prompt that fits.
func FuzzChatRequest(f *testing.F) {
	s := fuzzServer(f)
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
	})
}

// FuzzCompletionRequest is FuzzChatRequest for the completions decoder
// (prompt as text, token ids, or a list of one of either).
func FuzzCompletionRequest(f *testing.F) {
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var pr completionRequest
		e := decode(body, &pr)
		if e == nil {
			var plan *completionPlan
			if plan, e = s.planCompletion(&pr); e == nil && len(plan.prompt) > 0 { // submit refuses an empty token list
				checkPlan(t, plan.prompt, plan.params, pr.N)
			}
		}
		checkError(t, "completions", e)
	})
}

// FuzzLoadLoRARequest feeds arbitrary bodies to the load_lora_adapter
// decoder and checks: no panic, and a name it accepts is printable and
// short, not the base model's, with a path without NUL.
func FuzzLoadLoRARequest(f *testing.F) {
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzLoRA(t, s, body, true)
	})
}

// FuzzUnloadLoRARequest is FuzzLoadLoRARequest for unload_lora_adapter,
// which needs a name and no path.
func FuzzUnloadLoRARequest(f *testing.F) {
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzLoRA(t, s, body, false)
	})
}

func fuzzLoRA(t *testing.T, s *Server, body []byte, load bool) {
	var req loraRequest
	e := decode(body, &req)
	if e == nil {
		e = s.checkLoRARequest(&req, load)
		if e == nil && (!printable(req.Name) || len(req.Name) > maxNameBytes || req.Name == "tiny" || strings.ContainsRune(req.Path, 0) || load && req.Path == "") {
			t.Fatalf("accepted %+v", req)
		}
	}
	checkError(t, "lora", e)
}

// checkError: a refusal is a 400 whose message names no Go type or field.
func checkError(t *testing.T, what string, e *apiError) {
	t.Helper()
	if e != nil && (e.status != 400 || e.message == "" || strings.Contains(e.message, "serve.") || strings.Contains(e.message+e.param, "Fields") || strings.Contains(e.message, "Overrides")) {
		t.Fatalf("%s: error %+v", what, e)
	}
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
