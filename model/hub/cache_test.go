package hub

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writePythonCache lays out a repo exactly as huggingface_hub's
// hf_hub_download/snapshot_download leave it (see the cache diagram in its
// file_download.py docs): blobs named by etag, refs/<branch or tag> holding
// a bare commit hash, snapshots/<commit>/<file> as relative symlinks, and a
// .no_exist folder. Two commits share one blob.
func writePythonCache(t *testing.T, cache string) (oldCommit, newCommit string) {
	t.Helper()
	root := filepath.Join(cache, "models--Qwen--Qwen3-0.6B")
	oldCommit = "2439f60ef33a0d46d85da5001d52aeda5b00ce9f"
	newCommit = "bbc77c8132af1cc5cf678da3f1ddf2de43606d48"
	blobs := map[string]string{
		"403450e234d65943a7dcf7e05a771ce3c92faa84dd07db4ac20f592037a1e4bd": "weights",
		"7cb18dc9bafbfcf74629a4b760af1b160957a83e":                         `{"model_type":"qwen3","v":2}`,
		"d7edf6bd2a681fb0175f7735299831ee1b22b812":                         `{"model_type":"qwen3","v":1}`,
		"0b2c4bd9d2fd4cbd0bd8e1be53c1f18ef8b06c18":                         `{"model":{}}`,
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range blobs {
		must(os.MkdirAll(filepath.Join(root, "blobs"), 0o755))
		must(os.WriteFile(filepath.Join(root, "blobs", name), []byte(body), 0o644))
	}
	link := func(commit, file, blob string) {
		p := filepath.Join(root, "snapshots", commit, file)
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.Symlink(filepath.Join("..", "..", "blobs", blob), p))
	}
	link(oldCommit, "config.json", "d7edf6bd2a681fb0175f7735299831ee1b22b812")
	link(oldCommit, "tokenizer.json", "0b2c4bd9d2fd4cbd0bd8e1be53c1f18ef8b06c18")
	link(oldCommit, "model.safetensors", "403450e234d65943a7dcf7e05a771ce3c92faa84dd07db4ac20f592037a1e4bd")
	link(newCommit, "config.json", "7cb18dc9bafbfcf74629a4b760af1b160957a83e")
	link(newCommit, "tokenizer.json", "0b2c4bd9d2fd4cbd0bd8e1be53c1f18ef8b06c18")
	link(newCommit, "model.safetensors", "403450e234d65943a7dcf7e05a771ce3c92faa84dd07db4ac20f592037a1e4bd")
	must(os.MkdirAll(filepath.Join(root, "refs"), 0o755))
	must(os.WriteFile(filepath.Join(root, "refs", "main"), []byte(newCommit), 0o644))
	must(os.WriteFile(filepath.Join(root, "refs", "v1.0"), []byte(oldCommit), 0o644))
	must(os.MkdirAll(filepath.Join(root, ".no_exist", newCommit), 0o755))
	must(os.WriteFile(filepath.Join(root, ".no_exist", newCommit, "vocab.json"), nil, 0o644))
	return oldCommit, newCommit
}

// noNetwork is an endpoint that fails the test on any request.
func noNetwork(t *testing.T) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
		http.Error(w, "no", http.StatusTeapot)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

func TestPythonCacheFoundWithoutNetwork(t *testing.T) {
	isolate(t)
	home := os.Getenv("HF_HOME")
	cache := filepath.Join(home, "hub") // the default under HF_HOME
	oldCommit, newCommit := writePythonCache(t, cache)
	opts := Options{Endpoint: noNetwork(t)}
	root := filepath.Join(cache, "models--Qwen--Qwen3-0.6B", "snapshots")
	for rev, want := range map[string]string{"": newCommit, "main": newCommit, "v1.0": oldCommit, oldCommit: oldCommit} {
		o := opts
		o.Revision = rev
		dir, err := Resolve(context.Background(), "Qwen/Qwen3-0.6B", o)
		if err != nil {
			t.Fatalf("revision %q: %v", rev, err)
		}
		if dir != filepath.Join(root, want) {
			t.Fatalf("revision %q: %s, want snapshot %s", rev, dir, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, newCommit, "config.json"))
	if err != nil || !strings.Contains(string(b), `"v":2`) {
		t.Fatalf("config through the symlink: %q %v", b, err)
	}
	// DownloadFile by branch name hits the cache only when offline.
	t.Setenv("HF_HUB_OFFLINE", "1")
	p, err := DownloadFile(context.Background(), "Qwen/Qwen3-0.6B", "tokenizer.json", opts)
	if err != nil || p != filepath.Join(root, newCommit, "tokenizer.json") {
		t.Fatalf("offline DownloadFile: %s %v", p, err)
	}
}

func TestCacheDirFromEnvironment(t *testing.T) {
	isolate(t)
	home := os.Getenv("HF_HOME")
	if got := DefaultCacheDir(); got != filepath.Join(home, "hub") {
		t.Fatalf("HF_HOME: %s", got)
	}
	t.Setenv("HF_HOME", "")
	t.Setenv("XDG_CACHE_HOME", "/x")
	if got := DefaultCacheDir(); got != filepath.Join("/x", "huggingface", "hub") {
		t.Fatalf("XDG_CACHE_HOME: %s", got)
	}
	t.Setenv("HUGGINGFACE_HUB_CACHE", "/legacy")
	if got := DefaultCacheDir(); got != "/legacy" {
		t.Fatalf("HUGGINGFACE_HUB_CACHE: %s", got)
	}
	t.Setenv("HF_HUB_CACHE", "/hub")
	if got := DefaultCacheDir(); got != "/hub" {
		t.Fatalf("HF_HUB_CACHE must win: %s", got)
	}
	t.Setenv("HF_TOKEN", " hf_env \n")
	t.Setenv("HF_ENDPOINT", "https://mirror.example/")
	s, err := Options{}.resolve()
	if err != nil || s.Token != "hf_env" || s.Endpoint != "https://mirror.example" || s.Revision != "main" || s.repoType != Model {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	if _, err := (Options{RepoType: "space"}).resolve(); err == nil || !strings.Contains(err.Error(), `"space"`) {
		t.Fatalf("bad repo type: %v", err)
	}
}

func TestOfflineNotCached(t *testing.T) {
	isolate(t)
	t.Setenv("HF_HUB_OFFLINE", "1")
	opts := Options{Endpoint: noNetwork(t), CacheDir: t.TempDir()}
	_, err := Resolve(context.Background(), "Qwen/Qwen3-0.6B", opts)
	if !errors.Is(err, ErrNotCached) {
		t.Fatalf("want ErrNotCached, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"Qwen/Qwen3-0.6B", "revision main", "HF_HUB_OFFLINE", "grpo download Qwen/Qwen3-0.6B"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message spans lines: %q", msg)
	}
	if _, err := Download(context.Background(), "Qwen/Qwen3-0.6B", opts); !errors.Is(err, ErrNotCached) {
		t.Fatalf("offline Download: %v", err)
	}
}

// A snapshot missing one shard its index names is incomplete: offline that
// is an error naming the shard, online the shard is fetched.
func TestIncompleteShardedSnapshot(t *testing.T) {
	f := newFakeHub(t)
	files := tinyModel()
	delete(files, "model.safetensors")
	files["model-00001-of-00002.safetensors"] = []byte("shard one")
	files["model-00002-of-00002.safetensors"] = []byte("shard two")
	files["model.safetensors.index.json"] = []byte(`{"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`)
	repo := f.addRepo("model", "Org/Sharded", false, files)
	opts := testOptions(t, f)
	dir, err := Download(context.Background(), "Org/Sharded", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "model-00002-of-00002.safetensors")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_OFFLINE", "1")
	_, err = Resolve(context.Background(), "Org/Sharded", opts)
	if !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "model-00002-of-00002.safetensors") {
		t.Fatalf("offline: %v", err)
	}
	t.Setenv("HF_HUB_OFFLINE", "")
	before := f.count(f.cdnGet(""))
	dir2, err := Resolve(context.Background(), "Org/Sharded", opts)
	if err != nil || dir2 != dir {
		t.Fatalf("online: %s %v", dir2, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "model-00002-of-00002.safetensors")); string(b) != "shard two" {
		t.Fatalf("shard two = %q", b)
	}
	// The shard's blob was still there, so nothing was transferred again.
	if n := f.count(f.cdnGet("")) - before; n != 0 {
		t.Fatalf("%d blob transfers, want 0 (blob reused)", n)
	}
	_ = repo
}

func TestResolveLocalAndBadIDs(t *testing.T) {
	isolate(t)
	local := t.TempDir()
	dir, err := Resolve(context.Background(), local, Options{Endpoint: noNetwork(t)})
	if err != nil || dir != local {
		t.Fatalf("local dir: %s %v", dir, err)
	}
	for _, id := range []string{"./missing-model", "/no/such/dir", "a/b/c", "Org/na me", "Org--x/y", "", "../up"} {
		_, err := Resolve(context.Background(), id, Options{Endpoint: noNetwork(t), CacheDir: t.TempDir()})
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), id) {
			t.Errorf("%q: want ErrBadInput naming it, got %v", id, err)
		}
	}
	_, err = DownloadFile(context.Background(), "Org/x", "../../etc/passwd", Options{Endpoint: noNetwork(t), CacheDir: t.TempDir()})
	if !errors.Is(err, ErrBadInput) {
		t.Errorf("escaping file name: %v", err)
	}
	_, err = Download(context.Background(), "Org/x", Options{Endpoint: "ftp://x", CacheDir: t.TempDir()})
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "HF_ENDPOINT") {
		t.Errorf("bad endpoint: %v", err)
	}
}

// The expectations come from CPython's fnmatch.fnmatchcase, which
// huggingface_hub uses for allow_patterns.
func TestGlobMatchesPythonFnmatch(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"*.safetensors", "model.safetensors", true},
		{"*.safetensors", "sub/model-00001-of-00002.safetensors", true},
		{"*.safetensors", "model.safetensors.index.json", false},
		{"config.json", "config.json", true},
		{"config.json", "sub/config.json", false},
		{"main/*", "main/train.parquet", true},
		{"main/*", "main/x/y.parquet", true},
		{"main/*", "other/train.parquet", false},
		{"model-0000?-of-00002.safetensors", "model-00001-of-00002.safetensors", true},
		{"model-0000?-of-00002.safetensors", "model-00010-of-00002.safetensors", false},
		{"[!a]*.json", "config.json", true},
		{"[!c]*.json", "config.json", false},
		{"[a-c]*", "config.json", true},
		{"*.[jt]s*", "tokenizer.json", true},
		{"a+b(c).txt", "a+b(c).txt", true},
		{"a+b(c).txt", "aab(c).txt", false},
		{"[unclosed", "[unclosed", true},
	}
	for _, c := range cases {
		if got := globMatch(c.pattern, c.name); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, fnmatch says %v", c.pattern, c.name, got, c.want)
		}
	}
	// huggingface_hub treats a trailing '/' as the whole folder.
	if !globMatch("main/", "main/a/b") {
		t.Error("folder pattern")
	}
}
