package hub

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHub emulates the parts of huggingface.co that downloads touch, as the
// real hub answers them: the revision API with siblings, resolve URLs that
// answer small files directly (ETag = git blob sha1) and LFS files with a
// 302 to a separate CDN server (X-Linked-Etag = sha256, X-Linked-Size), the
// X-Repo-Commit and X-Error-Code headers, and 401 for gated repos.
type fakeHub struct {
	t   *testing.T
	hub *httptest.Server
	cdn *httptest.Server

	mu    sync.Mutex
	repos map[string]*fakeRepo // "models/org/name" or "datasets/org/name"
	// fault injection, keyed by "METHOD path"
	fail500  map[string]int // answer 500 this many times first
	truncate map[string]int // send only half the body this many times
	corrupt  map[string]bool
	noRange  bool // CDN ignores Range and always sends the whole file
	// observations
	requests    []string // "METHOD host path range"
	cdnAuthSeen bool
	hubAuthSeen bool
	cdnDelay    time.Duration
	// renamed maps an old repo path ("Old/Name") to its new one; the hub
	// answers the old one with a relative 307, as it does after a rename.
	renamed map[string]string
}

type fakeRepo struct {
	gated   bool
	commit  string
	branch  map[string]string // branch name -> commit
	files   map[string][]byte
	lfs     map[string]bool
	ordered []string
}

const fakeToken = "hf_testtoken"

func newFakeHub(t *testing.T) *fakeHub {
	f := &fakeHub{t: t, repos: map[string]*fakeRepo{}, fail500: map[string]int{}, truncate: map[string]int{}, corrupt: map[string]bool{}}
	f.hub = httptest.NewServer(http.HandlerFunc(f.serveHub))
	f.cdn = httptest.NewServer(http.HandlerFunc(f.serveCDN))
	t.Cleanup(f.hub.Close)
	t.Cleanup(f.cdn.Close)
	return f
}

func gitBlobSHA1(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// addRepo stores a repo; names ending in .safetensors or .bin are LFS files.
func (f *fakeHub) addRepo(kind, id string, gated bool, files map[string][]byte) *fakeRepo {
	r := &fakeRepo{gated: gated, files: files, lfs: map[string]bool{}}
	h := sha1.New()
	for name := range files {
		r.ordered = append(r.ordered, name)
	}
	sort.Strings(r.ordered)
	for _, name := range r.ordered {
		fmt.Fprintf(h, "%s:%x\n", name, files[name])
		if strings.HasSuffix(name, ".safetensors") || strings.HasSuffix(name, ".bin") || strings.HasSuffix(name, ".parquet") {
			r.lfs[name] = true
		}
	}
	r.commit = hex.EncodeToString(h.Sum(nil))
	r.branch = map[string]string{"main": r.commit}
	f.mu.Lock()
	f.repos[kind+"s/"+id] = r
	f.mu.Unlock()
	return r
}

// tinyModel is a small model repo: a few JSON files, one LFS weight file,
// and files grpo must not fetch (README.md, pytorch_model.bin).
func tinyModel() map[string][]byte {
	rng := rand.New(rand.NewSource(1))
	weights := make([]byte, 300_000)
	rng.Read(weights)
	bin := make([]byte, 1000)
	rng.Read(bin)
	return map[string][]byte{
		"config.json":            []byte(`{"model_type":"qwen3","hidden_size":16}`),
		"tokenizer.json":         []byte(`{"model":{"type":"BPE"}}`),
		"tokenizer_config.json":  []byte(`{"eos_token":"<|im_end|>"}`),
		"generation_config.json": []byte(`{"temperature":0.6}`),
		"model.safetensors":      weights,
		"pytorch_model.bin":      bin,
		"README.md":              []byte("# tiny\n"),
	}
}

func (f *fakeHub) log(r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", r.Method, r.Host, r.URL.Path, r.Header.Get("Range"))))
	f.mu.Unlock()
}

func (f *fakeHub) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func (f *fakeHub) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// injected500 consumes one pending 500 for key.
func (f *fakeHub) injected500(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail500[key] > 0 {
		f.fail500[key]--
		return true
	}
	return false
}

func (f *fakeHub) findRepo(path string) (*fakeRepo, string, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, r := range f.repos {
		if rest, ok := strings.CutPrefix(path, key+"/"); ok {
			return r, key, rest
		}
	}
	return nil, "", ""
}

func (f *fakeHub) authorized(r *http.Request, repo *fakeRepo) bool {
	return !repo.gated || r.Header.Get("Authorization") == "Bearer "+fakeToken
}

func (f *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	f.log(r)
	if r.Header.Get("Authorization") != "" {
		f.mu.Lock()
		f.hubAuthSeen = true
		f.mu.Unlock()
	}
	if f.injected500(r.Method + " " + r.URL.Path) {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	path := strings.TrimPrefix(r.URL.EscapedPath(), "/")
	for old, new := range f.renamed {
		if rest, ok := strings.CutPrefix(path, old+"/"); ok {
			http.Redirect(w, r, "/"+new+"/"+rest, http.StatusTemporaryRedirect)
			return
		}
		if rest, ok := strings.CutPrefix(path, "api/models/"+old+"/"); ok {
			http.Redirect(w, r, "/api/models/"+new+"/"+rest, http.StatusTemporaryRedirect)
			return
		}
	}
	if rest, ok := strings.CutPrefix(path, "api/"); ok {
		f.serveRevisionAPI(w, r, rest)
		return
	}
	if !strings.HasPrefix(path, "datasets/") {
		path = "models/" + path
	}
	repo, _, rest := f.findRepo(path)
	if repo == nil {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "Repository Not Found", http.StatusNotFound)
		return
	}
	if !f.authorized(r, repo) {
		w.Header().Set("X-Error-Code", "GatedRepo")
		http.Error(w, "Access to model is restricted", http.StatusUnauthorized)
		return
	}
	rev, file, ok := strings.Cut(strings.TrimPrefix(rest, "resolve/"), "/")
	if !ok || !strings.HasPrefix(rest, "resolve/") {
		http.NotFound(w, r)
		return
	}
	rev = unescape(rev)
	file = unescape(file)
	commit := repo.branch[rev]
	if commit == "" && rev == repo.commit {
		commit = rev
	}
	if commit == "" {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, "Invalid rev id", http.StatusNotFound)
		return
	}
	body, ok := repo.files[file]
	w.Header().Set("X-Repo-Commit", commit)
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	if repo.lfs[file] {
		sum := sha256Hex(body)
		w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(body)))
		w.Header().Set("ETag", `W/"redirect-not-the-file"`)
		w.Header().Set("Location", f.cdn.URL+"/blobs/"+sum+"?X-Amz-Signature=abc")
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+gitBlobSHA1(body)+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

func unescape(s string) string {
	out, err := url.PathUnescape(s)
	if err != nil {
		return s
	}
	return out
}

func (f *fakeHub) serveRevisionAPI(w http.ResponseWriter, r *http.Request, path string) {
	// {models|datasets}/org/name/revision/rev
	i := strings.LastIndex(path, "/revision/")
	if i < 0 {
		http.NotFound(w, r)
		return
	}
	repo, _, _ := f.findRepo(path[:i] + "/")
	if repo == nil {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		return
	}
	if !f.authorized(r, repo) {
		w.Header().Set("X-Error-Code", "GatedRepo")
		http.Error(w, `{"error":"gated"}`, http.StatusUnauthorized)
		return
	}
	rev := unescape(path[i+len("/revision/"):])
	commit := repo.branch[rev]
	if commit == "" && rev == repo.commit {
		commit = rev
	}
	if commit == "" {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
		return
	}
	type sib struct {
		RFilename string `json:"rfilename"`
	}
	out := struct {
		ID       string `json:"id"`
		SHA      string `json:"sha"`
		Siblings []sib  `json:"siblings"`
	}{SHA: commit}
	for _, name := range repo.ordered {
		out.Siblings = append(out.Siblings, sib{name})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// serveCDN serves LFS blobs by sha256, with Range support, like S3/CloudFront.
func (f *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	f.log(r)
	f.mu.Lock()
	if r.Header.Get("Authorization") != "" {
		f.cdnAuthSeen = true
	}
	delay := f.cdnDelay
	f.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	key := r.Method + " " + r.URL.Path
	if f.injected500(key) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	sum := strings.TrimPrefix(r.URL.Path, "/blobs/")
	var body []byte
	f.mu.Lock()
	for _, repo := range f.repos {
		for name, b := range repo.files {
			if repo.lfs[name] && sha256Hex(b) == sum {
				body = b
			}
		}
	}
	trunc := f.truncate[key] > 0
	if trunc {
		f.truncate[key]--
	}
	corrupt, noRange := f.corrupt[key], f.noRange
	f.mu.Unlock()
	if body == nil {
		http.NotFound(w, r)
		return
	}
	if corrupt {
		body = bytes.Clone(body)
		body[len(body)/2] ^= 0xff
	}
	if noRange {
		r.Header.Del("Range")
	}
	if trunc {
		// Announce the full length, send half, and drop the connection:
		// what a reset mid-transfer looks like to the client.
		start := 0
		if rg := r.Header.Get("Range"); rg != "" {
			fmt.Sscanf(rg, "bytes=%d-", &start)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(body)-1, len(body)))
			w.Header().Set("Content-Length", fmt.Sprint(len(body)-start))
			w.WriteHeader(http.StatusPartialContent)
		} else {
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.WriteHeader(http.StatusOK)
		}
		w.Write(body[start : start+(len(body)-start)/2])
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// cdnGet is the request-log prefix of a GET of blob sum from the CDN.
func (f *fakeHub) cdnGet(sum string) string {
	return "GET " + strings.TrimPrefix(f.cdn.URL, "http://") + " /blobs/" + sum
}
