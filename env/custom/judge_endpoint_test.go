package custom

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/rubric"
)

// TestJudgeByEndpointID: a judge term naming an endpoint of
// endpoints.toml asks that endpoint (its model, its key variable) and
// scores by its verdict.
func TestJudgeByEndpointID(t *testing.T) {
	var got struct {
		Model    string         `json:"model"`
		Messages []chat.Message `json:"messages"`
	}
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&got)
		auth = r.Header.Get("Authorization")
		w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"yes"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	t.Setenv("JUDGE_TEST_KEY", "k-123")
	dir := t.TempDir()
	envtest.WriteFile(t, dir, "endpoints.toml", "[[endpoint]]\nendpoint_id = \"judge\"\nmodel = \"judge-model\"\nurl = \""+srv.URL+"/v1\"\nkey = \"JUDGE_TEST_KEY\"\n")
	toml := strings.Replace(capitalsTOML, "[[rubric]]\ntype = \"format\"\nweight = 0.2\n",
		"[[rubric]]\ntype = \"judge\"\nendpoint = \"judge\"\nendpoints_path = \"endpoints.toml\"\nweight = 0.2\n", 1)
	envtest.WriteFile(t, dir, "environment.toml", toml)
	envtest.WriteFile(t, dir, "data/train.jsonl", `{"country": "France", "capital": "Paris"}`+"\n")
	envtest.WriteFile(t, dir, "data/test.jsonl", `{"country": "Peru", "capital": "Lima"}`+"\n")
	spec, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := spec.New(nil, env.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := e.Rubric().Score(context.Background(), rubric.Rollout{
		Prompt:     []chat.Message{{Role: "user", Content: "What is the capital of France?"}},
		Completion: []chat.Message{{Role: "assistant", Content: "<answer>Paris</answer>"}}, Answer: "Paris"})
	if len(res.Errors) > 0 || res.Reward != 1 {
		t.Errorf("reward %v errors %v", res.Reward, res.Errors)
	}
	if got.Model != "judge-model" || auth != "Bearer k-123" || !strings.Contains(got.Messages[0].Content, "Paris") {
		t.Errorf("judge asked %+v with %q", got, auth)
	}
	bad := strings.Replace(toml, "endpoint = \"judge\"", "endpoint = \"judg\"", 1)
	envtest.WriteFile(t, dir, "environment.toml", bad)
	if spec, err = LoadDir(dir); err == nil {
		_, err = spec.New(nil, env.Options{})
	}
	if err == nil || !strings.Contains(err.Error(), `did you mean "judge"`) {
		t.Errorf("a misspelt endpoint: %v", err)
	}
}
