package loader

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeHub serves one repo whose config.json is config; it records every
// path asked for.
func fakeHub(t *testing.T, config string) (url string, asked func() []string) {
	t.Helper()
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if !strings.HasSuffix(r.URL.Path, "/resolve/main/config.json") {
			http.NotFound(w, r) // the listing and the weights: a refused model never gets here
			return
		}
		w.Header().Set("X-Repo-Commit", strings.Repeat("a", 40))
		w.Header().Set("ETag", `"cfg1"`)
		w.Header().Set("Content-Length", fmt.Sprint(len(config)))
		if r.Method == http.MethodGet {
			fmt.Fprint(w, config)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), paths...)
	}
}

// TestHubConfigCheckedBeforeWeights: a hub model that is not cached has
// its config.json read alone first, and a model type or architecture grpo
// cannot run is refused then, naming the key, with no listing of the repo
// and no weight requested (issue 27: grpo eval and train --force
// downloaded the weights first).
func TestHubConfigCheckedBeforeWeights(t *testing.T) {
	for _, c := range []struct{ config, want string }{
		{`{"model_type": "bert", "architectures": ["BertForMaskedLM"]}`, "BertForMaskedLM"},
		{`{"model_type": "gpt2"}`, `"gpt2"`},
		{`{"model_type": "qwen3", "architectures": ["Qwen3ForSequenceClassification"]}`, `architectures = ["Qwen3ForSequenceClassification"]`},
	} {
		url, asked := fakeHub(t, c.config)
		t.Setenv("HF_ENDPOINT", url)
		t.Setenv("HF_HUB_CACHE", t.TempDir())
		t.Setenv("HF_HUB_OFFLINE", "")
		_, err := Resolve(context.Background(), "acme/some-model", nil)
		if err == nil || !strings.Contains(err.Error(), "config.json") || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "before downloading the weights") {
			t.Errorf("%s: %v", c.config, err)
		}
		for _, p := range asked() {
			if !strings.HasSuffix(p, "/config.json") {
				t.Errorf("%s: asked the hub for %s after config.json", c.config, p)
			}
		}
	}
}
