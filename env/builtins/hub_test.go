package builtins_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/model/hub"
)

// fakeDatasetHub answers the two requests a dataset download makes: the
// revision listing and the resolve URL of each file (HEAD and GET).
func fakeDatasetHub(t *testing.T, repo string, files map[string][]byte) (*httptest.Server, func() []string) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	var mu sync.Mutex
	var got []string
	requests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/api/datasets/"+repo+"/revision/main" {
			var sib []map[string]string
			for name := range files {
				sib = append(sib, map[string]string{"rfilename": name})
			}
			json.NewEncoder(w).Encode(map[string]any{"sha": sha, "siblings": sib})
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, "/datasets/"+repo+"/resolve/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, name, _ = strings.Cut(name, "/") // drop the revision
		body, ok := files[name]
		if !ok {
			w.Header().Set("X-Error-Code", "EntryNotFound")
			http.NotFound(w, r)
			return
		}
		sum := sha256.Sum256(body)
		w.Header().Set("X-Repo-Commit", sha)
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodGet {
			w.Write(body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, requests
}

func TestHubDatasetSplit(t *testing.T) {
	pq, err := os.ReadFile(filepath.Join(envtest.GSM8KDir, "sample.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	srv, reqs := fakeDatasetHub(t, "openai/gsm8k", map[string][]byte{
		"main/test-00000-of-00001.parquet":     pq,
		"main/train-00000-of-00001.parquet":    []byte("not used"),
		"socratic/test-00000-of-00001.parquet": []byte("not used"),
		"README.md":                            []byte("# gsm8k"),
	})
	hubOpt := env.WithHub(hub.Options{Endpoint: srv.URL, CacheDir: t.TempDir(), Token: "-"})

	e := envtest.NewEnv(t, "gsm8k", map[string]any{"num_eval_examples": 5}, hubOpt)
	exs, err := e.Examples("eval")
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 5 || exs[0].Answer != "18" {
		t.Fatalf("%d examples, first answer %q", len(exs), exs[0].Answer)
	}
	for _, r := range reqs() {
		if strings.Contains(r, "train-") || strings.Contains(r, "socratic") || strings.Contains(r, "README") {
			t.Errorf("fetched a file the split does not need: %s", r)
		}
	}
	// The second load comes from the cache, without the network.
	n := len(reqs())
	if _, err := e.Examples("eval"); err != nil || len(reqs()) != n {
		t.Errorf("second load made %d requests (%v)", len(reqs())-n, err)
	}
	if _, err := envtest.NewEnv(t, "gsm8k", map[string]any{"dataset_config": "nope"}, hubOpt).Examples("eval"); err == nil || !strings.Contains(err.Error(), "openai/gsm8k") {
		t.Errorf("missing config: %v", err)
	}
}
