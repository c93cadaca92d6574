package wikisearch

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// BM25 is wiki-search's offline page ranking, a departure from verifiers,
// which embeds page titles through an embeddings API (ChromaDB): Okapi
// BM25 (k1 1.2, b 0.75) over each page's title and text, the title's
// terms counted titleBoost times so a title match ranks first as it does
// with title embeddings. The index is built once per corpus and cached
// beside it.
const (
	bm25K1     = 1.2
	bm25B      = 0.75
	titleBoost = 3
)

// bm25Index is the inverted index, as cached: per term, the pages holding
// it with the term's count there.
type bm25Index struct {
	Fingerprint string                `json:"fingerprint"`
	DocLen      []int                 `json:"doc_len"`
	Postings    map[string][][2]int32 `json:"postings"` // term → [page, count]
	avgLen      float64
}

// bm25Terms splits text into lower-case words of letters and digits.
func bm25Terms(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
}

func buildBM25(c *wikiCorpus) *bm25Index {
	ix := &bm25Index{Fingerprint: c.fingerprint(), DocLen: make([]int, len(c.pages)), Postings: map[string][][2]int32{}}
	for i, p := range c.pages {
		counts := map[string]int32{}
		for _, t := range bm25Terms(p.Title) {
			counts[t] += titleBoost
		}
		for _, t := range bm25Terms(p.Content) {
			counts[t]++
		}
		terms := make([]string, 0, len(counts))
		for t, n := range counts {
			terms = append(terms, t)
			ix.DocLen[i] += int(n)
		}
		sort.Strings(terms) // a deterministic cache file
		for _, t := range terms {
			ix.Postings[t] = append(ix.Postings[t], [2]int32{int32(i), counts[t]})
		}
	}
	ix.finish()
	return ix
}

func (ix *bm25Index) finish() {
	total := 0
	for _, n := range ix.DocLen {
		total += n
	}
	ix.avgLen = float64(total) / math.Max(1, float64(len(ix.DocLen)))
}

// loadBM25 returns the corpus's index: the cached one in cacheDir when it
// was built from these pages, else a new one, written there atomically
// (cacheDir "" keeps it in memory; a cache that cannot be written is only
// a slower next start, so that is not an error).
func loadBM25(c *wikiCorpus, cacheDir string) *bm25Index {
	fp := c.fingerprint()
	file := filepath.Join(cacheDir, "bm25-"+fp+".json")
	if cacheDir != "" {
		if data, err := os.ReadFile(file); err == nil {
			var ix bm25Index
			if json.Unmarshal(data, &ix) == nil && ix.Fingerprint == fp && len(ix.DocLen) == len(c.pages) {
				ix.finish()
				return &ix
			}
		}
	}
	ix := buildBM25(c)
	if cacheDir != "" {
		if data, err := json.Marshal(ix); err == nil && os.MkdirAll(cacheDir, 0o755) == nil {
			if err := atomicfile.WriteFile(file, data, 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "wiki-search: could not cache the BM25 index (%v); it is rebuilt next time\n", err)
			}
		}
	}
	return ix
}

// search returns up to k pages by descending BM25 score (ties by page
// order); pages sharing no term with the query are left out.
func (ix *bm25Index) search(query string, k int) []int {
	n := float64(len(ix.DocLen))
	scores := map[int32]float64{}
	seen := map[string]bool{}
	for _, t := range bm25Terms(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		post := ix.Postings[t]
		if len(post) == 0 {
			continue
		}
		df := float64(len(post))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, pc := range post {
			tf := float64(pc[1])
			norm := bm25K1 * (1 - bm25B + bm25B*float64(ix.DocLen[pc[0]])/ix.avgLen)
			scores[pc[0]] += idf * tf * (bm25K1 + 1) / (tf + norm)
		}
	}
	docs := make([]int, 0, len(scores))
	for d := range scores {
		docs = append(docs, int(d))
	}
	sort.Slice(docs, func(i, j int) bool {
		si, sj := scores[int32(docs[i])], scores[int32(docs[j])]
		if si != sj {
			return si > sj
		}
		return docs[i] < docs[j]
	})
	return docs[:min(k, len(docs))]
}
