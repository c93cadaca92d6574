package serve

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/tokenizer"
)

// TestReplicas: two cpu replicas behind one handler serve 8 concurrent
// greedy requests, both replicas taking some, with the texts one server
// gives; an adapter loaded through them is on both (each replica's
// /v1/models lists it) and serves its greedy texts as one server with
// the adapter does; unloading removes it from both.
func TestReplicas(t *testing.T) {
	one := newFixture(t, Config{})
	dir := t.TempDir()
	writeTestModel(t, dir)
	var servers []*Server
	for range 2 {
		m, err := model.Load(dir, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		tok, err := tokenizer.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := New(m, tok, Config{ModelName: "tiny", MaxLen: 256})
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, srv)
	}
	reps := NewReplicas(servers)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reps.Run(ctx) }()
	hs := httptest.NewServer(reps.Handler())
	t.Cleanup(func() {
		hs.Close()
		cancel()
		<-done
	})
	two := &fixture{srv: servers[0], url: hs.URL}
	texts := func(f *fixture, modelName string) []string {
		out := make([]string, 8)
		var wg sync.WaitGroup
		for i := range out {
			wg.Go(func() {
				code, body := f.post(t, "/v1/completions", map[string]any{"model": modelName, "prompt": fmt.Sprintf("prompt %d:", i), "max_tokens": 5, "temperature": 0, "ignore_eos": true})
				if code != 200 {
					t.Errorf("%s: request %d: %d %s", modelName, i, code, body)
					return
				}
				out[i] = decodeJSON[struct{ Choices []struct{ Text string } }](t, body).Choices[0].Text
			})
		}
		wg.Wait()
		return out
	}
	check := func(what string, got, want []string) {
		for i := range want {
			if got[i] != want[i] || want[i] == "" {
				t.Errorf("%s: request %d: %q on 2 replicas, %q on one", what, i, got[i], want[i])
			}
		}
	}
	check("base", texts(two, "tiny"), texts(one, "tiny"))
	if served := reps.Served(); served[0] == 0 || served[1] == 0 || served[0]+served[1] != 8 {
		t.Errorf("requests per replica %v: want both serving, 8 in all", served)
	}
	t.Logf("requests per replica: %v", reps.Served())
	load := map[string]any{"lora_name": "rt", "lora_path": goodAdapter(t)}
	for _, f := range []*fixture{one, two} {
		if code, body := f.post(t, "/v1/load_lora_adapter", load); code != 200 {
			t.Fatalf("load: %d %s", code, body)
		}
	}
	for i, s := range servers {
		if names := s.adapters.names(); len(names) != 1 || names[0] != "rt" {
			t.Errorf("replica %d holds adapters %v after the load, want [rt]", i, names)
		}
	}
	check("adapter", texts(two, "rt"), texts(one, "rt"))
	if code, body := two.post(t, "/v1/load_lora_adapter", load); code != 400 {
		t.Errorf("loading rt twice: %d %s, want 400", code, body)
	}
	if code, body := two.post(t, "/v1/unload_lora_adapter", map[string]any{"lora_name": "rt"}); code != 200 {
		t.Fatalf("unload: %d %s", code, body)
	}
	for i, s := range servers {
		if names := s.adapters.names(); len(names) != 0 {
			t.Errorf("replica %d holds adapters %v after the unload", i, names)
		}
	}
}
