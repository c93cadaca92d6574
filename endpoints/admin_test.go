package endpoints

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAdapterCallsReachEveryReplica: LoadLoRA and UnloadLoRA are sent to
// each replica (vLLM's bodies, plain-text success), not to one picked by
// load; CheckServes reads each replica's /models. A replica's refusal or
// absence fails the call with its URL and status.
func TestAdapterCallsReachEveryReplica(t *testing.T) {
	var mu sync.Mutex
	var got []string
	served := map[int][]string{0: {"base"}, 1: {"base"}}
	var srvs [2]*httptest.Server
	for i := range srvs {
		srvs[i] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			var body map[string]string
			json.NewDecoder(r.Body).Decode(&body)
			got = append(got, fmt.Sprintf("%d %s %s %s %s", i, r.Method, r.URL.Path, body["lora_name"], body["lora_path"]))
			switch r.URL.Path {
			case "/v1/models":
				var ids []string
				for _, id := range served[i] {
					ids = append(ids, fmt.Sprintf(`{"id": %q, "object": "model"}`, id))
				}
				fmt.Fprintf(w, `{"object": "list", "data": [%s]}`, strings.Join(ids, ","))
			case "/v1/load_lora_adapter":
				if body["lora_name"] == "bad" {
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprint(w, `{"error": {"message": "cannot read the adapter", "type": "BadRequestError"}}`)
					return
				}
				served[i] = append(served[i], body["lora_name"])
				fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", body["lora_name"])
			case "/v1/unload_lora_adapter":
				fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", body["lora_name"])
			}
		}))
		defer srvs[i].Close()
		u := srvs[i].URL
		served[i] = append(served[i], "m-"+u[len(u)-5:]) // the replica's own model name (client)
	}
	c := client(t, Options{}, srvs[0].URL, srvs[1].URL)
	ctx := context.Background()
	if err := c.CheckServes(ctx, ""); err != nil { // each replica's own model
		t.Fatal(err)
	}
	if err := c.LoadLoRA(ctx, "step-1", "/runs/r/step-1"); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckServes(ctx, "step-1"); err != nil {
		t.Fatal(err)
	}
	if err := c.UnloadLoRA(ctx, "step-1"); err != nil {
		t.Fatal(err)
	}
	want := []string{"0 GET /v1/models  ", "1 GET /v1/models  ",
		"0 POST /v1/load_lora_adapter step-1 /runs/r/step-1", "1 POST /v1/load_lora_adapter step-1 /runs/r/step-1",
		"0 GET /v1/models  ", "1 GET /v1/models  ",
		"0 POST /v1/unload_lora_adapter step-1 ", "1 POST /v1/unload_lora_adapter step-1 "}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	err := c.LoadLoRA(ctx, "bad", "/x")
	if err == nil || !strings.Contains(err.Error(), srvs[0].URL+"/v1/load_lora_adapter") || !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(err.Error(), "cannot read the adapter") {
		t.Errorf("refused load: %v", err)
	}
	err = c.CheckServes(ctx, "missing")
	if err == nil || !strings.Contains(err.Error(), `does not serve model "missing" (it serves base, m-`) || !strings.Contains(err.Error(), ", step-1)") {
		t.Errorf("model not served: %v", err)
	}
	down := srvs[1].URL
	srvs[1].Close()
	quick := client(t, Options{MaxRetries: -1, Timeout: time.Second}, srvs[0].URL, down)
	if err := quick.CheckServes(ctx, ""); err == nil || !strings.Contains(err.Error(), down+"/v1/models") {
		t.Errorf("unreachable replica: %v", err)
	}
}
