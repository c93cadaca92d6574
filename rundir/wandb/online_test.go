package wandb

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeWandb is a W&B server that checks the requests the SDK's protocol
// needs: basic auth api:<key> on GraphQL and file_stream, UpsertBucket
// with the run's name/project/entity/config, history lines at consecutive
// offsets, and a final complete post with the exit code.
type fakeWandb struct {
	t   *testing.T
	key string
	srv *httptest.Server

	mu       sync.Mutex
	upsert   map[string]any // UpsertBucket's variables
	history  []map[string]any
	summary  map[string]any
	final    map[string]any
	uploaded map[string][]byte
	refuse   bool
}

func newFakeWandb(t *testing.T, key string) *fakeWandb {
	f := &fakeWandb{t: t, key: key, uploaded: map[string][]byte{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeWandb) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.t
	body, _ := io.ReadAll(r.Body)
	if strings.HasPrefix(r.URL.Path, "/upload/") {
		if r.Method != http.MethodPut || r.Header.Get("X-Upload-Token") != "t0k" {
			t.Errorf("upload %s with headers %v", r.Method, r.Header)
		}
		if _, _, ok := r.BasicAuth(); ok {
			t.Error("the key was sent to the signed upload URL")
		}
		f.uploaded[strings.TrimPrefix(r.URL.Path, "/upload/")] = body
		return
	}
	user, pass, ok := r.BasicAuth()
	if !ok || user != "api" || pass != f.key || f.refuse {
		http.Error(w, `{"errors":[{"message":"permission denied"}]}`, http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s %s as %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	switch {
	case r.URL.Path == "/graphql":
		var q struct {
			Query     string         `json:"query"`
			Variables map[string]any `json:"variables"`
		}
		if err := json.Unmarshal(body, &q); err != nil {
			t.Fatalf("graphql body %s: %v", body, err)
		}
		switch {
		case strings.Contains(q.Query, "mutation UpsertBucket(") && strings.Contains(q.Query, "upsertBucket(input:"):
			f.upsert = q.Variables
			entity, _ := q.Variables["entity"].(string)
			if entity == "" {
				entity = "default-entity" // the key's entity, as the server fills it in
			}
			json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"upsertBucket": map[string]any{
				"bucket": map[string]any{"id": "UnVuOnYx", "name": q.Variables["name"], "historyLineCount": 0,
					"project": map[string]any{"name": q.Variables["project"], "entity": map[string]any{"name": entity}}},
				"inserted": true}}})
		case strings.Contains(q.Query, "mutation CreateRunFiles(") && strings.Contains(q.Query, "createRunFiles(input:"):
			var files []map[string]any
			for _, name := range q.Variables["files"].([]any) {
				files = append(files, map[string]any{"name": name, "uploadUrl": f.srv.URL + "/upload/" + name.(string)})
			}
			if q.Variables["run"] != f.upsert["name"] || q.Variables["project"] != f.upsert["project"] {
				t.Errorf("createRunFiles for %v", q.Variables)
			}
			json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"createRunFiles": map[string]any{
				"runID": "UnVuOnYx", "uploadHeaders": []string{"X-Upload-Token:t0k"}, "files": files}}})
		default:
			t.Errorf("unexpected GraphQL %s", q.Query)
		}
	case f.upsert != nil && r.URL.Path == "/files/"+entityOf(f.upsert)+"/"+f.upsert["project"].(string)+"/"+f.upsert["name"].(string)+"/file_stream":
		var fs struct {
			Files map[string]struct {
				Offset  int      `json:"offset"`
				Content []string `json:"content"`
			} `json:"files"`
			Complete *bool `json:"complete"`
		}
		json.Unmarshal(body, &fs)
		if f.final != nil {
			t.Errorf("file_stream post after the final one: %s", body)
		}
		if fs.Complete != nil {
			json.Unmarshal(body, &f.final)
			break
		}
		for name, chunk := range fs.Files {
			switch name {
			case "wandb-history.jsonl":
				if chunk.Offset != len(f.history) {
					t.Errorf("history offset %d after %d lines", chunk.Offset, len(f.history))
				}
				for _, line := range chunk.Content {
					var row map[string]any
					if err := json.Unmarshal([]byte(line), &row); err != nil {
						t.Errorf("history line %q: %v", line, err)
					}
					f.history = append(f.history, row)
				}
			case "wandb-summary.json":
				if chunk.Offset != 0 || len(chunk.Content) != 1 {
					t.Errorf("summary chunk %+v", chunk)
				}
				json.Unmarshal([]byte(chunk.Content[0]), &f.summary)
			default:
				t.Errorf("unexpected file %s", name)
			}
		}
		w.Write([]byte(`{"exitcode": null, "limits": {}}`))
	default:
		t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}
}

func entityOf(v map[string]any) string {
	if e, _ := v["entity"].(string); e != "" {
		return e
	}
	return "default-entity"
}

func TestOnlineFollowsProtocol(t *testing.T) {
	const key = "secret-key-0123456789"
	f := newFakeWandb(t, key)
	root := t.TempDir()
	plot := filepath.Join(root, "rewards.png")
	writePNG(t, plot)
	var warnings []string
	r, line, err := Start(filepath.Join(root, "wandb"), Options{Project: "proj", Name: "my run", Tags: []string{"x"},
		Config: map[string]any{"max_steps": 3, "model": "m"}, Host: "h",
		Env: envOf(map[string]string{"WANDB_API_KEY": key, "WANDB_BASE_URL": f.srv.URL + "/"}), Now: clock(),
		Warn: func(s string) { warnings = append(warnings, s) }})
	if err != nil {
		t.Fatal(err)
	}
	wantURL := f.srv.URL + "/default-entity/proj/runs/" + r.ID()
	if !strings.Contains(line, "logging to "+wantURL) || strings.Contains(line, key) {
		t.Errorf("line %q", line)
	}
	v := f.upsert
	var cfg map[string]map[string]any
	json.Unmarshal([]byte(v["config"].(string)), &cfg)
	if v["name"] != r.ID() || v["project"] != "proj" || v["entity"] != nil || v["displayName"] != "my run" ||
		cfg["max_steps"]["value"] != 3.0 || cfg["model"]["value"] != "m" || len(v["tags"].([]any)) != 1 {
		t.Errorf("UpsertBucket variables %v", v)
	}
	rewards := []float64{0.25, 0.5, 0.125}
	logSteps(t, r, rewards, plot)
	if len(warnings) > 0 {
		t.Fatalf("warnings %v", warnings)
	}
	if len(f.history) != 1+len(rewards) {
		t.Fatalf("%d history lines", len(f.history))
	}
	for i, row := range f.history {
		if row["_step"] != float64(i) {
			t.Errorf("line %d has _step %v (out of order)", i, row["_step"])
		}
		if i > 0 && row["reward"] != rewards[i-1] {
			t.Errorf("line %d reward %v", i, row["reward"])
		}
	}
	if f.history[2]["eval/reward"] != 0.5 {
		t.Errorf("eval did not join step 2: %v", f.history[2])
	}
	if f.final["complete"] != true || f.final["exitcode"] != 0.0 {
		t.Errorf("final post %v", f.final)
	}
	img, _ := f.summary["rewards"].(map[string]any)
	if img == nil || f.summary["reward"] != 0.125 || len(f.uploaded[img["path"].(string)]) == 0 {
		t.Errorf("summary %v, uploaded %v", f.summary, f.uploaded)
	}
	if up, _ := f.final["uploaded"].([]any); len(up) != 1 || up[0] != img["path"] {
		t.Errorf("final uploaded %v", f.final["uploaded"])
	}
	// The local copy is the same run, in the online layout.
	checkOffline(t, r.Dir(), true, rewards)
}

func TestRefusedKeyGoesOfflineWithoutPrintingIt(t *testing.T) {
	f := newFakeWandb(t, "right-key")
	r, line, err := Start(t.TempDir(), Options{Project: "p",
		Env: envOf(map[string]string{"WANDB_API_KEY": "wrong-key-987", "WANDB_BASE_URL": f.srv.URL}), Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "offline run at") || !strings.Contains(line, "refused the run (HTTP 401") || strings.Contains(line, "wrong-key-987") {
		t.Errorf("line %q", line)
	}
	r.Finish(0, "")
}

func TestUploadFailureMidRunWarnsAndKeepsLocal(t *testing.T) {
	f := newFakeWandb(t, "k")
	var warnings []string
	r, _, err := Start(t.TempDir(), Options{Project: "p", Now: clock(),
		Env:  envOf(map[string]string{"WANDB_API_KEY": "k", "WANDB_BASE_URL": f.srv.URL}),
		Warn: func(s string) { warnings = append(warnings, s) }})
	if err != nil {
		t.Fatal(err)
	}
	r.Log(1, map[string]float64{"reward": 1})
	f.mu.Lock()
	f.refuse = true
	f.mu.Unlock()
	r.Log(2, map[string]float64{"reward": 0.5}) // flushes step 1: refused
	r.Log(3, map[string]float64{"reward": 0.25})
	r.Finish(0, "")
	if len(warnings) != 1 || !strings.Contains(warnings[0], "upload failed") || !strings.Contains(warnings[0], "wandb sync "+r.Dir()) || strings.Contains(warnings[0], "k@") {
		t.Fatalf("warnings %q", warnings)
	}
	if f.final != nil {
		t.Errorf("a final post after going offline: %v", f.final)
	}
}
