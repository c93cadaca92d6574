package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/scripted"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// TestWikiSearchScriptedEpisode plays a full wiki-search episode with a
// scripted policy through the real evaluation path (Qwen3's tokenizer and
// template, the sampler, the tool loop, the rubric): search, view the
// page's sections, read one, answer — reward 1 by the exact-match
// fallback, three tool calls counted, none failed.
func TestWikiSearchScriptedEpisode(t *testing.T) {
	dir := filepath.Join("..", "testdata", "tokenizer", "qwen3")
	tok, err := tokenizer.LoadFiles(filepath.Join(dir, "tokenizer.json.gz"), filepath.Join(dir, "tokenizer_config.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	qs := filepath.Join(t.TempDir(), "q.jsonl")
	os.WriteFile(qs, []byte(`{"question": "Who made the first recorded ascent of Mount Sefa?", "answer": "Teodor Lisk"}`+"\n"), 0o644)
	e, err := env.New("wiki-search", map[string]any{"questions_path": qs}, env.WithVersion("v0"))
	if err != nil {
		t.Fatal(err)
	}
	call := func(name, args string) string {
		return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>"
	}
	be, err := scripted.New(cpu.New(), tok,
		"I will search for the mountain.\n"+call("search_pages", `{"query": "Mount Sefa"}`),
		call("view_sections", `{"page_id": "mount_sefa"}`),
		call("read_section", `{"section_id": "mount_sefa:climbing"}`),
		"The first recorded ascent of Mount Sefa was made by Teodor Lisk, in 1834.")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &model.Config{ModelType: "qwen3", HiddenSize: 16, IntermediateSize: 32, NumLayers: 1, NumHeads: 2,
		NumKVHeads: 1, HeadDim: 8, VocabSize: tok.VocabSize(), RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
	m := model.NewRandom(cfg, be, 5)
	p := sampler.DefaultParams()
	p.MaxTokens = 64
	res, err := runKept(m, tok, e, "wiki-search", Options{NumExamples: -1, RolloutsPerExample: 1, Sampling: p, EnableThinking: new(bool), Batch: DefaultBatch})
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Trajectories[0]
	if tr.Turns != 4 || tr.Reward != 1 || len(tr.Errors) != 0 || res.PassAt1 != 1 {
		t.Fatalf("%d turns, reward %v, errors %q, messages %+v; want 4 turns, reward 1", tr.Turns, tr.Reward, tr.Errors, tr.Messages)
	}
	results := []string{}
	for _, msg := range tr.Messages {
		if msg.Role == "tool" {
			results = append(results, msg.Content)
		}
	}
	if len(results) != 3 || !strings.HasPrefix(results[0], "[{'page_id': 'mount_sefa', 'title': 'Mount Sefa'}") ||
		!strings.Contains(results[1], "'section_id': 'mount_sefa:climbing'") || !strings.Contains(results[2], "by the botanist Teodor Lisk") {
		t.Errorf("tool results %q", results)
	}
	row := res.Rows()[0]
	for k, want := range map[string]float64{"tool_calls": 3, "tool_errors": 0, "tool_calls/search_pages": 1, "tool_calls/view_sections": 1, "tool_calls/read_section": 1, "exact_match": 1} {
		if got, ok := row.Metrics[k]; !ok || got != want {
			t.Errorf("eval row metric %s = %v (present %v), want %v; metrics %v", k, got, ok, want, row.Metrics)
		}
	}
	if !strings.Contains(tok.Decode(tr.PromptTokens), `"name": "search_pages"`) {
		t.Error("the prompt does not show wiki-search's tools")
	}
}
