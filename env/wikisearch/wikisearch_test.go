package wikisearch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
)

// wikiEnv builds v0 (verifiers 8d4b33247), which these tests are about;
// wikisearch_v1_test.go tests v1.
func wikiEnv(t *testing.T, args map[string]any) *wikiSearch {
	t.Helper()
	e, err := env.New("wiki-search", args, env.WithVersion("v0"))
	if err != nil {
		t.Fatal(err)
	}
	return e.(*wikiSearch)
}

func callTool(t *testing.T, e *wikiSearch, name, args string) (string, error) {
	t.Helper()
	for _, tl := range e.Tools() {
		if tl.Name() == name {
			spec, err := env.ParseToolSchema(tl.Schema())
			if err != nil {
				t.Fatal(err)
			}
			if err := env.CheckToolArgs(spec, json.RawMessage(args)); err != nil {
				t.Fatalf("%s(%s): %v", name, args, err)
			}
			return tl.Call(context.Background(), json.RawMessage(args))
		}
	}
	t.Fatalf("no tool %s", name)
	return "", nil
}

// TestWikiSearchTools: verifiers' three tools over the bundled corpus,
// with their outputs as Python writes them and their errors.
func TestWikiSearchTools(t *testing.T) {
	e := wikiEnv(t, nil)
	got, err := callTool(t, e, "search_pages", `{"query": "Mount Sefa volcano"}`)
	if err != nil || !strings.HasPrefix(got, "[{'page_id': 'mount_sefa', 'title': 'Mount Sefa'}, ") || strings.Count(got, "'page_id'") > 10 {
		t.Errorf("search_pages: %q, %v", got, err)
	}
	if _, err := callTool(t, e, "search_pages", `{"query": "zzqx"}`); err == nil || err.Error() != "No results found for query: zzqx" {
		t.Errorf("a query matching nothing: %v", err)
	}
	got, err = callTool(t, e, "view_sections", `{"page_id": "mount_sefa"}`)
	want := "[{'section_id': 'mount_sefa:mount_sefa', 'section_name': 'Mount Sefa'}, {'section_id': 'mount_sefa:geology', 'section_name': 'Geology'}, {'section_id': 'mount_sefa:climbing', 'section_name': 'Climbing'}]"
	if err != nil || got != want {
		t.Errorf("view_sections:\ngot  %q\nwant %q (%v)", got, want, err)
	}
	got, err = callTool(t, e, "read_section", `{"section_id": "mount_sefa:climbing"}`)
	if err != nil || got != "## Climbing\n\nThe first recorded ascent was made in 1834 by the botanist Teodor Lisk.\n" {
		t.Errorf("read_section: %q, %v", got, err)
	}
	if got, _ := callTool(t, e, "read_section", `{"section_id": "mount_sefa:geology"}`); !strings.HasSuffix(got, "Lake Ivra.\n") {
		t.Errorf("a middle section runs to the next heading: %q", got)
	}
	full, _ := callTool(t, e, "read_section", `{"section_id": "mount_sefa:full"}`)
	if !strings.HasPrefix(full, "# Mount Sefa\n") || !strings.Contains(full, "## Climbing") {
		t.Errorf("full page: %q", full)
	}
	for args, want := range map[string]string{
		`{"section_id": "mount_sefa"}`:      "Invalid section_id format. Expected: page_id:section_name",
		`{"section_id": "mount_sefa:lava"}`: "Section not found: mount_sefa:lava",
		`{"section_id": "everest:history"}`: `page "everest" not found; use a page_id from search_pages`,
	} {
		if _, err := callTool(t, e, "read_section", args); err == nil || err.Error() != want {
			t.Errorf("read_section %s: %v, want %q", args, err, want)
		}
	}
	if _, err := callTool(t, e, "view_sections", `{"page_id": "nope"}`); err == nil {
		t.Error("view_sections of a missing page succeeded")
	}
	if e.MaxTurns() != 10 || e.ReplyTokens() < 1024 {
		t.Errorf("max_turns %d, reply room %d", e.MaxTurns(), e.ReplyTokens())
	}
}

func TestPyRepr(t *testing.T) {
	for in, want := range map[string]string{
		"plain": "'plain'", "it's": `"it's"`, `both ' and "`: `'both \' and "'`, "a\\b\n\t": `'a\\b\n\t'`,
		"é€😀": "'é€😀'", "\x01\u200b": `'\x01\u200b'`,
	} {
		if got := pyRepr(in); got != want {
			t.Errorf("pyRepr(%q) = %s, want %s", in, got, want)
		}
	}
}

// Every bundled question is answered by its corpus: BM25 ranks, in the
// top 10 for the question's text, a page whose text holds the answer.
func TestWikiBundledQuestionsAnswerable(t *testing.T) {
	e := wikiEnv(t, nil)
	exs, err := e.Examples("eval")
	if err != nil || len(exs) != 30 {
		t.Fatalf("%d questions, %v", len(exs), err)
	}
	if exs[0].Prompt[0].Content != wikiSystemPrompt || exs[0].Prompt[1].Role != "user" {
		t.Errorf("prompt %+v", exs[0].Prompt)
	}
	ix := buildBM25(e.corpus)
	for _, ex := range exs {
		found := false
		for _, d := range ix.search(ex.Prompt[1].Content, wikiSearchResults) {
			found = found || strings.Contains(e.corpus.pages[d].Content, ex.Answer)
		}
		if !found {
			t.Errorf("%q: no page among the top %d holds %q", ex.Prompt[1].Content, wikiSearchResults, ex.Answer)
		}
	}
	train, _ := wikiEnv(t, map[string]any{"num_train_examples": 5}).Examples("train")
	if len(train) != 5 {
		t.Errorf("num_train_examples 5: %d", len(train))
	}
}

// The exact-match fallback: the normalized answer as whole words.
func TestWikiExactMatch(t *testing.T) {
	rb := wikiEnv(t, nil).Rubric()
	for resp, want := range map[string]float64{
		"<think>\nIt might be 1611.\n</think>\n\nThe islands were charted in 1612.": 1,
		"It was 16120.": 0, "Mount Sefa!": 0, "": 0,
	} {
		r := rb.Score(context.Background(), rubric.Rollout{Prompt: []chat.Message{{Role: "user", Content: "q"}},
			Completion: []chat.Message{{Role: "assistant", Content: resp}}, Answer: "1612"})
		if r.Reward != want || r.Metrics["exact_match"] != want {
			t.Errorf("%q: reward %v metrics %v, want %v", resp, r.Reward, r.Metrics, want)
		}
	}
	if !answerMatch("It is the Ivra Char, a fish.", "Ivra char") || answerMatch("the char", "Ivra char") {
		t.Error("answerMatch")
	}
}

// A corpus directory: Markdown pages and JSONL rows; the BM25 index is
// cached beside it and used again (a stale cache for other pages is not).
func TestWikiCorpusDirAndCache(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "alpha.md"), []byte("# Alpha Page\n\nAlpha text about comets.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "more.jsonl"), []byte(`{"id": "beta", "title": "Beta", "content": "Beta has no headings, only words about comets and moons."}`+"\n"), 0o644)
	qs := filepath.Join(t.TempDir(), "q.jsonl")
	os.WriteFile(qs, []byte(`{"question": "Which page talks of moons?", "answer": "Beta"}`+"\n"), 0o644)
	e := wikiEnv(t, map[string]any{"corpus_dir": dir, "questions_path": qs})
	cached, _ := filepath.Glob(filepath.Join(dir, ".grpo-index", "bm25-*.json"))
	if len(cached) != 1 {
		t.Fatalf("cache files %v, want one", cached)
	}
	got, _ := callTool(t, e, "search_pages", `{"query": "moons"}`)
	if got != "[{'page_id': 'beta', 'title': 'Beta'}]" {
		t.Errorf("search: %q", got)
	}
	if got, _ := callTool(t, e, "view_sections", `{"page_id": "beta"}`); got != "[{'section_id': 'beta:full', 'section_name': 'Full Page'}]" {
		t.Errorf("a page without headings: %q", got)
	}
	// The cache is read back: corrupt its postings and the search follows it.
	var ix bm25Index
	data, _ := os.ReadFile(cached[0])
	json.Unmarshal(data, &ix)
	ix.Postings["moons"] = [][2]int32{{0, 1}}
	data, _ = json.Marshal(&ix)
	os.WriteFile(cached[0], data, 0o644)
	e = wikiEnv(t, map[string]any{"corpus_dir": dir})
	if got, _ := callTool(t, e, "search_pages", `{"query": "moons"}`); !strings.Contains(got, "'alpha'") {
		t.Errorf("the cached index was not used: %q", got)
	}
	// New pages, new fingerprint: a fresh index.
	os.WriteFile(filepath.Join(dir, "gamma.md"), []byte("# Gamma\n\nmoons moons moons\n"), 0o644)
	e = wikiEnv(t, map[string]any{"corpus_dir": dir})
	if got, _ := callTool(t, e, "search_pages", `{"query": "moons"}`); !strings.HasPrefix(got, "[{'page_id': 'gamma'") {
		t.Errorf("a stale cache was used: %q", got)
	}
	if _, err := env.New("wiki-search", map[string]any{"corpus_dir": filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing corpus_dir was accepted")
	}
	os.WriteFile(filepath.Join(dir, "bad.jsonl"), []byte(`{"id": "a:b", "title": "x", "content": ""}`+"\n"), 0o644)
	if _, err := env.New("wiki-search", map[string]any{"corpus_dir": dir}); err == nil || !strings.Contains(err.Error(), "without ':'") {
		t.Errorf("a page id with ':': %v", err)
	}
}
