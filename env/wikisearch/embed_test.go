package wikisearch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/rubric"
)

// fakeEmbeddings embeds a text as counts of a few marker words, so the
// nearest title is predictable; it counts the texts it embedded.
func fakeEmbeddings(t *testing.T, texts *atomic.Int32) *httptest.Server {
	words := []string{"lake", "mount", "symphony", "tram"}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string
			Input []string
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "emb-1" || r.Header.Get("Authorization") != "Bearer k3y" {
			http.Error(w, "bad request", 400)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out []item
		for i, s := range req.Input {
			texts.Add(1)
			v := make([]float32, len(words)+1)
			v[len(words)] = 0.01
			for j, w := range words {
				v[j] = float32(strings.Count(strings.ToLower(s), w))
			}
			out = append([]item{{i, v}}, out...) // any order: the index says which
		}
		json.NewEncoder(w).Encode(map[string]any{"data": out})
	}))
}

// With embed_base_url, search_pages ranks by title embeddings (verifiers'
// way) through the endpoint; the titles are embedded once and cached
// beside the corpus.
func TestWikiEmbeddingSearch(t *testing.T) {
	t.Setenv("EMB_KEY", "k3y")
	var texts atomic.Int32
	srv := fakeEmbeddings(t, &texts)
	defer srv.Close()
	dir := t.TempDir()
	for _, p := range []string{"lake_ivra", "mount_sefa", "tidal_symphony", "caldris_tram", "orsk"} {
		data, _ := wikiData.ReadFile("wikidata/pages/" + p + ".md")
		envtest.WriteFile(t, dir, p+".md", string(data))
	}
	args := map[string]any{"corpus_dir": dir, "embed_base_url": srv.URL + "/v1", "embed_model": "emb-1", "embed_api_key_var": "EMB_KEY"}
	e := wikiEnv(t, args)
	got, err := callTool(t, e, "search_pages", `{"query": "a symphony"}`)
	if err != nil || !strings.HasPrefix(got, "[{'page_id': 'tidal_symphony', 'title': 'Tidal Symphony'}, ") || strings.Count(got, "page_id") != 5 {
		t.Fatalf("search: %q, %v", got, err)
	}
	if n := texts.Load(); n != 6 {
		t.Errorf("%d texts embedded, want 5 titles and the query", n)
	}
	if cached, _ := filepath.Glob(filepath.Join(dir, ".grpo-index", "titles-emb-1-*.json")); len(cached) != 1 {
		t.Errorf("title embeddings cache: %v", cached)
	}
	e = wikiEnv(t, args)
	if got, _ := callTool(t, e, "search_pages", `{"query": "the lake"}`); !strings.HasPrefix(got, "[{'page_id': 'lake_ivra'") {
		t.Errorf("second search: %q", got)
	}
	if n := texts.Load(); n != 7 {
		t.Errorf("%d texts embedded after a new environment's search; the cached titles must be reused", n)
	}
	args["embed_model"] = "other"
	if _, err := callTool(t, wikiEnv(t, args), "search_pages", `{"query": "x"}`); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("an endpoint refusing the model: %v", err)
	}
}

// With judge_base_url, the reward is verifiers' judge through rubric.Judge
// with verifiers' prompt.
func TestWikiJudge(t *testing.T) {
	var prompt string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string
			Messages []chat.Message
		}
		json.NewDecoder(r.Body).Decode(&req)
		prompt = req.Messages[0].Content
		verdict := "no"
		if strings.Contains(prompt, "Response:\n    ```\n    Skerrow.\n") {
			verdict = "yes"
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": verdict}}}})
	}))
	defer srv.Close()
	rb := wikiEnv(t, map[string]any{"judge_base_url": srv.URL, "judge_api_key_var": ""}).Rubric()
	for resp, want := range map[string]float64{"Skerrow.": 1, "Orsk.": 0} {
		r := rb.Score(context.Background(), rubric.Rollout{Prompt: []chat.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "What is the main town?"}},
			Completion: []chat.Message{{Role: "assistant", Content: resp}}, Answer: "Skerrow"})
		if r.Reward != want || r.Metrics["judge_reward_func"] != want {
			t.Errorf("%q: %v %v, want %v", resp, r.Reward, r.Metrics, want)
		}
	}
	if !strings.HasPrefix(prompt, "Given a ground truth answer     and a response") || !strings.Contains(prompt, "Question:\n    ```\n    What is the main town?\n    ```") {
		t.Errorf("judge prompt %q", prompt)
	}
}
