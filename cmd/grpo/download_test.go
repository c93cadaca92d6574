package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDownloadCommand drives `grpo download` end to end against a minimal
// hub (listing + one small file), and checks a hub error comes out as one
// line with exit status 1. The download machinery itself is tested in
// model/hub.
func TestDownloadCommand(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	config := []byte(`{"model_type":"qwen3"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/models/Org/Tiny/revision/main":
			fmt.Fprintf(w, `{"sha":%q,"siblings":[{"rfilename":"config.json"},{"rfilename":"README.md"}]}`, commit)
		case "/Org/Tiny/resolve/" + commit + "/config.json":
			w.Header().Set("X-Repo-Commit", commit)
			// git hash-object of config: the hub names small files by it.
			w.Header().Set("ETag", `"5f7136fda1d6893867ad69d0a5564227ec070dae"`)
			w.Write(config)
		default:
			w.Header().Set("X-Error-Code", "RepoNotFound")
			http.Error(w, "Repository not found", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	for _, k := range []string{"HF_TOKEN", "HF_TOKEN_PATH", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_OFFLINE"} {
		t.Setenv(k, "")
	}
	home := t.TempDir()
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_ENDPOINT", srv.URL)

	var stdout, stderr bytes.Buffer
	if rc := runMain([]string{"download", "Org/Tiny", "--include", "config.json"}, &stdout, &stderr); rc != 0 {
		t.Fatalf("rc %d: %s", rc, stderr.String())
	}
	got, err := os.ReadFile(filepath.Join(home, "hub", "models--Org--Tiny", "snapshots", commit, "config.json"))
	if err != nil || !bytes.Equal(got, config) {
		t.Fatalf("cached config.json: %q %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(home, "hub", "models--Org--Tiny", "snapshots", commit, "README.md")); err == nil {
		t.Fatal("README.md fetched despite --include")
	}

	stderr.Reset()
	rc := runMain([]string{"download", "Org/Missing"}, &stdout, &stderr)
	msg := stderr.String()
	if rc != 1 || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "Org/Missing") || !strings.Contains(msg, "not found") {
		t.Fatalf("rc %d, stderr %q: want one line naming the repo", rc, msg)
	}
	stderr.Reset()
	if rc := runMain([]string{"download", "Org/Tiny", "--repo-type", "space"}, &stdout, &stderr); rc != 2 || !strings.Contains(stderr.String(), "model or dataset") {
		t.Fatalf("bad --repo-type: rc %d %q", rc, stderr.String())
	}
}
