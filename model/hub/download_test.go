package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	retryBase = time.Millisecond
	retryMax = 5 * time.Millisecond
	os.Exit(m.Run())
}

// isolate clears every environment variable hub reads, so the developer's
// own token or cache never leaks into a test.
func isolate(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	for _, k := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_ENDPOINT", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_OFFLINE", "XDG_CACHE_HOME"} {
		t.Setenv(k, "")
	}
	t.Setenv("HF_HOME", home)
}

func testOptions(t *testing.T, f *fakeHub) Options {
	isolate(t)
	return Options{Endpoint: f.hub.URL, CacheDir: t.TempDir(), HTTPClient: &http.Client{}}
}

// checkSnapshot verifies dir holds exactly want's files with the right
// bytes, each a relative symlink into blobs/ named by its etag, as
// huggingface_hub lays out the cache.
func checkSnapshot(t *testing.T, dir string, all map[string][]byte, want []string) {
	t.Helper()
	for _, name := range want {
		p := filepath.Join(dir, name)
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, all[name]) {
			t.Fatalf("%s: content differs from the hub's", name)
		}
		target, err := os.Readlink(p)
		if err != nil {
			t.Fatalf("%s is not a symlink: %v", name, err)
		}
		etag := gitBlobSHA1(all[name])
		if strings.HasSuffix(name, ".safetensors") {
			etag = sha256Hex(all[name])
		}
		if want := filepath.Join("..", "..", "blobs", etag); target != want {
			t.Fatalf("%s -> %s, want relative link %s", name, target, want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(want) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("snapshot holds %v, want %v", names, want)
	}
}

func noIncomplete(t *testing.T, root string) {
	t.Helper()
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && (strings.HasSuffix(p, ".incomplete") || strings.Contains(p, ".tmp-")) {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

var modelFiles = []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}

func TestDownloadModelLayout(t *testing.T) {
	f := newFakeHub(t)
	files := tinyModel()
	repo := f.addRepo("model", "Org/Tiny", false, files)
	opts := testOptions(t, f)
	opts.Token = fakeToken // a token must reach the hub but never the CDN
	var progress bytes.Buffer
	opts.Progress = func(p FileProgress) { fmt.Fprintf(&progress, "%s %d/%d\n", p.File, p.Done, p.Total) }

	dir, err := Resolve(context.Background(), "Org/Tiny", opts)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(opts.CacheDir, "models--Org--Tiny")
	if want := filepath.Join(root, "snapshots", repo.commit); dir != want {
		t.Fatalf("dir %s, want %s", dir, want)
	}
	checkSnapshot(t, dir, files, modelFiles)
	ref, err := os.ReadFile(filepath.Join(root, "refs", "main"))
	if err != nil || string(ref) != repo.commit {
		t.Fatalf("refs/main = %q (%v), want %s with no newline", ref, err, repo.commit)
	}
	noIncomplete(t, root)
	if f.cdnAuthSeen {
		t.Fatal("the token was sent to the CDN host")
	}
	if !f.hubAuthSeen {
		t.Fatal("the token was not sent to the hub")
	}
	if f.count(f.cdnGet("")) != 1 {
		t.Fatalf("weights fetched %d times from the CDN, want 1: %v", f.count(f.cdnGet("")), f.requests)
	}
	if !strings.Contains(progress.String(), "model.safetensors") {
		t.Fatalf("no progress bar for the weights in %q", progress.String())
	}

	// A second Resolve finds the snapshot without any request.
	before := f.total()
	dir2, err := Resolve(context.Background(), "Org/Tiny", opts)
	if err != nil || dir2 != dir {
		t.Fatalf("second Resolve: %s, %v", dir2, err)
	}
	if f.total() != before {
		t.Fatalf("second Resolve made %d requests", f.total()-before)
	}
	// Download always asks the hub, but fetches nothing already cached.
	if _, err := Download(context.Background(), "Org/Tiny", opts); err != nil {
		t.Fatal(err)
	}
	if got := f.total() - before; got != 1 {
		t.Fatalf("Download of a cached commit made %d requests, want 1 (the listing)", got)
	}
}

func TestGatedRepo(t *testing.T) {
	f := newFakeHub(t)
	files := tinyModel()
	f.addRepo("model", "meta-llama/Gated", true, files)
	opts := testOptions(t, f)

	_, err := Resolve(context.Background(), "meta-llama/Gated", opts)
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "HF_TOKEN") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want one-line ErrAuth naming HF_TOKEN, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(opts.CacheDir, "models--meta-llama--Gated", "snapshots")); err == nil {
		t.Fatal("a refused download created a snapshot")
	}
	opts.Token = "hf_wrong"
	if _, err := Resolve(context.Background(), "meta-llama/Gated", opts); !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "token was refused") {
		t.Fatalf("wrong token: %v", err)
	}
	// The token file under HF_HOME is the default, as in huggingface_hub.
	opts.Token = ""
	if err := os.WriteFile(filepath.Join(os.Getenv("HF_HOME"), "token"), []byte(fakeToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir, err := Resolve(context.Background(), "meta-llama/Gated", opts)
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, dir, files, modelFiles)
	if f.cdnAuthSeen {
		t.Fatal("the token was sent to the CDN host")
	}
}

func TestNotFound(t *testing.T) {
	f := newFakeHub(t)
	f.addRepo("model", "Org/Tiny", false, tinyModel())
	opts := testOptions(t, f)
	ctx := context.Background()

	cases := []struct {
		name, id, rev, file, want string
	}{
		{"repo", "Org/Missing", "", "", "repository not found"},
		{"revision", "Org/Tiny", "v9", "", `revision "v9" not found`},
		{"file", "Org/Tiny", "", "nope.json", "file not found"},
	}
	for _, c := range cases {
		o := opts
		o.Revision = c.rev
		var err error
		if c.file != "" {
			_, err = DownloadFile(ctx, c.id, c.file, o)
		} else {
			_, err = Resolve(ctx, c.id, o)
		}
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.id) {
			t.Errorf("%s: want ErrNotFound with %q naming %s, got %v", c.name, c.want, c.id, err)
		}
	}
	// Patterns that select nothing say what the repo has.
	o := opts
	o.AllowPatterns = []string{"*.gguf"}
	if _, err := Download(ctx, "Org/Tiny", o); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("no match: %v", err)
	}
}

func TestRetryServerErrors(t *testing.T) {
	f := newFakeHub(t)
	files := tinyModel()
	repo := f.addRepo("model", "Org/Tiny", false, files)
	f.fail500["GET /api/models/Org/Tiny/revision/main"] = 2
	f.fail500["HEAD /Org/Tiny/resolve/"+repo.commit+"/config.json"] = 1
	f.fail500["GET /blobs/"+sha256Hex(files["model.safetensors"])] = 2
	opts := testOptions(t, f)
	dir, err := Resolve(context.Background(), "Org/Tiny", opts)
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, dir, files, modelFiles)
	for k, n := range f.fail500 {
		if n != 0 {
			t.Errorf("%s: %d injected failures never reached", k, n)
		}
	}

	// A hub that keeps failing: a bounded number of tries, one clear line,
	// and nothing in the cache.
	f.fail500["GET /api/models/Org/Tiny/revision/main"] = 1000
	opts.CacheDir = t.TempDir()
	before := f.total()
	_, err = Resolve(context.Background(), "Org/Tiny", opts)
	if !errors.Is(err, ErrTransfer) || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("want ErrTransfer naming HTTP 500, got %v", err)
	}
	if n := f.total() - before; n != maxAttempts {
		t.Fatalf("%d requests, want %d", n, maxAttempts)
	}
	if entries, _ := os.ReadDir(opts.CacheDir); len(entries) != 0 {
		t.Fatalf("failed download left %v in the cache", entries)
	}
}

func TestTruncatedBodyResumes(t *testing.T) {
	f := newFakeHub(t)
	files := tinyModel()
	f.addRepo("model", "Org/Tiny", false, files)
	blobURL := "GET /blobs/" + sha256Hex(files["model.safetensors"])
	f.truncate[blobURL] = 1
	opts := testOptions(t, f)
	dir, err := Resolve(context.Background(), "Org/Tiny", opts)
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, dir, files, modelFiles)
	cdn := f.cdnGet(sha256Hex(files["model.safetensors"]))
	half := len(files["model.safetensors"]) / 2
	if f.count(cdn+" bytes=") != 1 || f.count(cdn+" bytes="+strconv.Itoa(half)+"-") != 1 {
		t.Fatalf("want one resume at byte %d, requests: %v", half, f.requests)
	}
}

func TestInterruptedDownloadKeepsPartialAndResumes(t *testing.T) {
	f := newFakeHub(t)
	files := tinyModel()
	f.addRepo("model", "Org/Tiny", false, files)
	blobURL := "GET /blobs/" + sha256Hex(files["model.safetensors"])
	f.truncate[blobURL] = maxAttempts
	opts := testOptions(t, f)
	_, err := Resolve(context.Background(), "Org/Tiny", opts)
	if !errors.Is(err, ErrTransfer) || !strings.Contains(err.Error(), "resume") || !strings.Contains(err.Error(), "model.safetensors") {
		t.Fatalf("want ErrTransfer naming the file and resume, got %v", err)
	}
	root := filepath.Join(opts.CacheDir, "models--Org--Tiny")
	partial := filepath.Join(root, "blobs", sha256Hex(files["model.safetensors"])+".incomplete")
	st, err := os.Stat(partial)
	if err != nil || st.Size() == 0 || st.Size() >= int64(len(files["model.safetensors"])) {
		t.Fatalf("partial file: %v %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(root, "refs", "main")); err == nil {
		t.Fatal("refs/main written for an incomplete snapshot")
	}
	if _, err := os.Lstat(filepath.Join(root, "snapshots")); err == nil {
		entries, _ := filepath.Glob(filepath.Join(root, "snapshots", "*", "model.safetensors"))
		if len(entries) != 0 {
			t.Fatal("snapshot has an entry for an unfinished file")
		}
	}
	// The next run resumes from the partial file's end.
	have := st.Size()
	dir, err := Resolve(context.Background(), "Org/Tiny", opts)
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, dir, files, modelFiles)
	if f.count(f.cdnGet(sha256Hex(files["model.safetensors"]))+" bytes="+strconv.Itoa(int(have))+"-") != 1 {
		t.Fatalf("rerun did not resume at %d: %v", have, f.requests)
	}
	noIncomplete(t, root)
}

func TestCorruptDownloadIsDiscarded(t *testing.T) {
	f := newFakeHub(t)
	files := tinyModel()
	f.addRepo("model", "Org/Tiny", false, files)
	f.corrupt["GET /blobs/"+sha256Hex(files["model.safetensors"])] = true
	opts := testOptions(t, f)
	_, err := Resolve(context.Background(), "Org/Tiny", opts)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("want ErrCorrupt, got %v", err)
	}
	root := filepath.Join(opts.CacheDir, "models--Org--Tiny")
	noIncomplete(t, root)
	if exists(filepath.Join(root, "blobs", sha256Hex(files["model.safetensors"]))) {
		t.Fatal("corrupt blob kept")
	}
}

func TestServerIgnoringRangeRestarts(t *testing.T) {
	f := newFakeHub(t)
	files := tinyModel()
	f.addRepo("model", "Org/Tiny", false, files)
	f.truncate["GET /blobs/"+sha256Hex(files["model.safetensors"])] = 1
	f.noRange = true
	opts := testOptions(t, f)
	dir, err := Resolve(context.Background(), "Org/Tiny", opts)
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, dir, files, modelFiles)
}

func TestConcurrentDownloadsShareOneTransfer(t *testing.T) {
	f := newFakeHub(t)
	files := tinyModel()
	f.addRepo("model", "Org/Tiny", false, files)
	f.cdnDelay = 50 * time.Millisecond
	opts := testOptions(t, f)
	var wg sync.WaitGroup
	dirs := make([]string, 3)
	errs := make([]error, 3)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := opts
			o.HTTPClient = &http.Client{}
			dirs[i], errs[i] = Download(context.Background(), "Org/Tiny", o)
		}()
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		checkSnapshot(t, dirs[i], files, modelFiles)
	}
	if n := f.count(f.cdnGet("")); n != 1 {
		t.Fatalf("weights transferred %d times, want 1 (the lock serialises)", n)
	}
}

func TestCancelledDownload(t *testing.T) {
	f := newFakeHub(t)
	f.addRepo("model", "Org/Tiny", false, tinyModel())
	f.cdnDelay = time.Second
	opts := testOptions(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := Resolve(ctx, "Org/Tiny", opts)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("want an interrupted error, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(opts.CacheDir, "models--Org--Tiny", "refs")); err == nil {
		t.Fatal("refs written for a cancelled download")
	}
}

func TestDataset(t *testing.T) {
	f := newFakeHub(t)
	data := map[string][]byte{
		"main/train-00000-of-00001.parquet": []byte("PAR1 train rows PAR1"),
		"main/test-00000-of-00001.parquet":  []byte("PAR1 test rows PAR1"),
		"README.md":                         []byte("# gsm8k\n"),
	}
	repo := f.addRepo("dataset", "openai/gsm8k", false, data)
	opts := testOptions(t, f)
	opts.RepoType = Dataset
	p, err := DownloadFile(context.Background(), "openai/gsm8k", "main/test-00000-of-00001.parquet", opts)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(opts.CacheDir, "datasets--openai--gsm8k")
	if want := filepath.Join(root, "snapshots", repo.commit, "main", "test-00000-of-00001.parquet"); p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	if target, _ := os.Readlink(p); target != filepath.Join("..", "..", "..", "blobs", sha256Hex(data["main/test-00000-of-00001.parquet"])) {
		t.Fatalf("nested file links to %q", target)
	}
	if ref, _ := os.ReadFile(filepath.Join(root, "refs", "main")); string(ref) != repo.commit {
		t.Fatalf("refs/main = %q", ref)
	}
	opts.AllowPatterns = []string{"main/*"}
	dir, err := Download(context.Background(), "openai/gsm8k", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "main", "train-00000-of-00001.parquet")); !bytes.Equal(got, data["main/train-00000-of-00001.parquet"]) {
		t.Fatal("train split differs")
	}
	if exists(filepath.Join(dir, "README.md")) {
		t.Fatal("README.md fetched despite AllowPatterns")
	}
	// Offline, the cached file is found by branch name.
	t.Setenv("HF_HUB_OFFLINE", "1")
	before := f.total()
	if p2, err := DownloadFile(context.Background(), "openai/gsm8k", "main/test-00000-of-00001.parquet", opts); err != nil || p2 != p {
		t.Fatalf("offline: %s %v", p2, err)
	}
	if _, err := DownloadFile(context.Background(), "openai/gsm8k", "README.md", opts); !errors.Is(err, ErrNotCached) {
		t.Fatalf("offline, uncached: %v", err)
	}
	if f.total() != before {
		t.Fatal("offline mode made requests")
	}
}

// A renamed repo answers with a relative redirect, which metadata requests
// follow (unlike the absolute one to the CDN).
func TestRenamedRepoRedirect(t *testing.T) {
	f := newFakeHub(t)
	files := tinyModel()
	repo := f.addRepo("model", "Org/Tiny", false, files)
	f.renamed = map[string]string{"Old/Tiny": "Org/Tiny"}
	opts := testOptions(t, f)
	p, err := DownloadFile(context.Background(), "Old/Tiny", "config.json", opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(opts.CacheDir, "models--Old--Tiny", "snapshots", repo.commit, "config.json"); p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	dir, err := Download(context.Background(), "Old/Tiny", opts)
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, dir, files, modelFiles)
}

// TestProgressEvents: a download reports its file from 0 bytes, as the
// bytes arrive, and finished once, at its full size. (cmd/grpo draws these
// as the progress bar: TestDownloadProgressBar.)
func TestProgressEvents(t *testing.T) {
	f := newFakeHub(t)
	files := tinyModel()
	f.addRepo("model", "Org/Tiny", false, files)
	opts := testOptions(t, f)
	var events []FileProgress
	opts.Progress = func(p FileProgress) { events = append(events, p) }
	if _, err := DownloadFile(context.Background(), "Org/Tiny", "model.safetensors", opts); err != nil {
		t.Fatal(err)
	}
	size := int64(len(files["model.safetensors"]))
	if len(events) < 3 || events[0] != (FileProgress{File: "model.safetensors", Done: 0, Total: size}) {
		t.Fatalf("events %v: want a start at 0 of %d, progress, and the finish", events, size)
	}
	last := events[len(events)-1]
	if last != (FileProgress{File: "model.safetensors", Done: size, Total: size, Finished: true}) {
		t.Fatalf("last event %+v, want finished at %d", last, size)
	}
	for i, e := range events[:len(events)-1] {
		if e.Finished || e.File != "model.safetensors" || e.Total != size || (i > 0 && e.Done < events[i-1].Done) {
			t.Fatalf("event %d: %+v after %+v", i, e, events[max(i-1, 0)])
		}
	}
}
