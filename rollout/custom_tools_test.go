package rollout

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/env"
	_ "github.com/grpo-dev/grpo/env/custom" // finds environment.toml directories
)

// TestCustomEnvHTTPTool: an environment.toml with an HTTP-backed [[tool]]
// plays through the tool loop — the scripted model calls the tool, reads
// its result, answers — and the [[rubric]] scores the answer.
func TestCustomEnvHTTPTool(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if string(body) == `{"country": "Peru"}` {
			io.WriteString(w, "The capital of Peru is Lima.")
			return
		}
		http.Error(w, "unknown", http.StatusNotFound)
	}))
	defer srv.Close()
	dir := t.TempDir()
	toml := `id = "test/atlas"
max_turns = 3
parser = "xml:answer"
prompt_template = "What is the capital of {country}?"
[dataset]
train = "train.jsonl"
question_field = "country"
answer_field = "capital"
[[rubric]]
type = "exact"
[[tool]]
name = "atlas"
description = "Look a country up."
parameters = { type = "object", properties = { country = { type = "string" } }, required = ["country"] }
url = "` + srv.URL + `"
`
	os.WriteFile(filepath.Join(dir, "environment.toml"), []byte(toml), 0o644)
	os.WriteFile(filepath.Join(dir, "train.jsonl"), []byte(`{"country": "Peru", "capital": "Lima"}`+"\n"), 0o644)
	e, err := env.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	exs, err := e.Examples("train")
	if err != nil {
		t.Fatal(err)
	}
	tok := qwen3Tokenizer(t)
	m := scriptedModel(t, tok, "<tool_call>\n{\"name\": \"atlas\", \"arguments\": {\"country\": \"Peru\"}}\n</tool_call>", "<answer>Lima</answer>")
	trajs, err := Local(context.Background(), m, tok, e, exs, 1, rolloutParams100(), 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := trajs[0]
	if tr.Turns != 2 || tr.Reward != 1 || len(tr.Errors) != 0 || tr.Messages[1].Content != "The capital of Peru is Lima." || tr.ToolMetrics["tool_calls/atlas"] != 1 {
		t.Errorf("%d turns, reward %v, errors %q, messages %+v, tool metrics %v", tr.Turns, tr.Reward, tr.Errors, tr.Messages, tr.ToolMetrics)
	}
}
