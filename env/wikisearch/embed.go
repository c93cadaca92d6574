package wikisearch

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/env/internal/httpjson"
	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// titleEmbedder ranks pages as verifiers' wiki-search does: by cosine
// similarity of the query's embedding to each page title's, both from an
// OpenAI-compatible /embeddings endpoint (verifiers keeps them in
// ChromaDB; here the title embeddings are computed once and cached beside
// the corpus, keyed by model and corpus).
type titleEmbedder struct {
	url, model string
	headers    map[string]string
	client     *http.Client
	corpus     *wikiCorpus
	cacheDir   string

	once   sync.Once
	titles [][]float32
	err    error
}

const embedBatch = 100 // titles per request, as verifiers upserts them

func newTitleEmbedder(baseURL, model, apiKeyVar string, c *wikiCorpus, cacheDir string) (*titleEmbedder, error) {
	if model == "" {
		return nil, fmt.Errorf("embed_model is empty; name the embedding model the endpoint serves")
	}
	h := map[string]string{}
	if apiKeyVar != "" {
		if key := os.Getenv(apiKeyVar); key != "" {
			h["Authorization"] = "Bearer " + key
		}
	}
	return &titleEmbedder{url: strings.TrimRight(baseURL, "/") + "/embeddings", model: model, headers: h,
		client: http.DefaultClient, corpus: c, cacheDir: cacheDir}, nil
}

func (t *titleEmbedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	payload, _ := json.Marshal(map[string]any{"model": t.model, "input": texts})
	body, err := httpjson.Post(ctx, t.client, t.url, t.headers, payload, 60*time.Second, 256<<20)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %v", err)
	}
	var resp struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || len(resp.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings: %s: reply %s does not hold %d embeddings", t.url, httpjson.Preview(body), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil || len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embeddings: %s: reply has a bad or repeated index %d", t.url, d.Index)
		}
		out[d.Index] = normalize(d.Embedding)
	}
	return out, nil
}

func normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// titleVectors embeds every title once (or reads the cache).
func (t *titleEmbedder) titleVectors(ctx context.Context) ([][]float32, error) {
	t.once.Do(func() {
		file := ""
		if t.cacheDir != "" {
			file = filepath.Join(t.cacheDir, "titles-"+safeName(t.model)+"-"+t.corpus.fingerprint()+".json")
			if data, err := os.ReadFile(file); err == nil && json.Unmarshal(data, &t.titles) == nil && len(t.titles) == len(t.corpus.pages) {
				return
			}
		}
		t.titles = nil
		for i := 0; i < len(t.corpus.pages); i += embedBatch {
			var batch []string
			for _, p := range t.corpus.pages[i:min(i+embedBatch, len(t.corpus.pages))] {
				batch = append(batch, strings.TrimSpace(p.Title))
			}
			vs, err := t.embed(ctx, batch)
			if err != nil {
				t.err = err
				return
			}
			t.titles = append(t.titles, vs...)
		}
		if file != "" {
			if data, err := json.Marshal(t.titles); err == nil && os.MkdirAll(t.cacheDir, 0o755) == nil {
				_ = atomicfile.WriteFile(file, data, 0o644) // a cache: recomputed when missing
			}
		}
	})
	return t.titles, t.err
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// search returns the k pages whose titles are nearest the query.
func (t *titleEmbedder) search(ctx context.Context, query string, k int) ([]int, error) {
	titles, err := t.titleVectors(ctx)
	if err != nil {
		return nil, err
	}
	q, err := t.embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	sims := make([]float64, len(titles))
	docs := make([]int, len(titles))
	for i, v := range titles {
		docs[i] = i
		for j := range min(len(v), len(q[0])) {
			sims[i] += float64(v[j]) * float64(q[0][j])
		}
	}
	sort.SliceStable(docs, func(a, b int) bool { return sims[docs[a]] > sims[docs[b]] })
	return docs[:min(k, len(docs))], nil
}
