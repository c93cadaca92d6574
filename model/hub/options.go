package hub

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// RepoType says which kind of hub repository an id names; it picks the URL
// prefix and the cache folder prefix (models--org--name, datasets--org--name).
type RepoType string

const (
	Model   RepoType = "model"
	Dataset RepoType = "dataset"
)

// DefaultEndpoint is the public hub, used when neither Options.Endpoint nor
// $HF_ENDPOINT is set.
const DefaultEndpoint = "https://huggingface.co"

// DefaultModelPatterns are the files a model needs for grpo: config,
// tokenizer and safetensors weights. Other files in a model repo (PyTorch
// .bin weights, ONNX, GGUF) are never fetched.
var DefaultModelPatterns = []string{
	"config.json",
	"generation_config.json",
	"tokenizer.json",
	"tokenizer_config.json",
	"*.safetensors",
	"model.safetensors.index.json",
	"special_tokens_map.json",
	"vocab.json",
	"merges.txt",
}

// Options control where Resolve and Download look and what they fetch.
// The zero value means: read every setting from the environment the way
// huggingface_hub does.
type Options struct {
	// Revision is a branch, tag or commit hash; default "main".
	Revision string
	// RepoType is Model (default) or Dataset.
	RepoType RepoType
	// Token is sent as a Bearer token to the endpoint (never to a CDN it
	// redirects to). Default: $HF_TOKEN, then $HUGGING_FACE_HUB_TOKEN,
	// then the file $HF_TOKEN_PATH or $HF_HOME/token.
	Token string
	// Endpoint is the hub's base URL; default $HF_ENDPOINT or DefaultEndpoint.
	Endpoint string
	// CacheDir is the hub cache; default $HF_HUB_CACHE, then
	// $HUGGINGFACE_HUB_CACHE, then $HF_HOME/hub, then
	// $XDG_CACHE_HOME/huggingface/hub, then ~/.cache/huggingface/hub.
	CacheDir string
	// Offline forbids network access; it is also on when $HF_HUB_OFFLINE
	// is 1/true/yes/on.
	Offline bool
	// AllowPatterns selects the repository files Resolve and Download fetch
	// (shell globs where * also matches '/', as in huggingface_hub).
	// Default for models: DefaultModelPatterns; for datasets: every file.
	AllowPatterns []string
	// Progress hears how each download advances, to draw it (the CLI draws
	// a progress bar per file); nil = silent.
	Progress func(FileProgress)
	// HTTPClient is used for every request; default http.DefaultClient.
	// Its redirect policy is replaced: grpo follows redirects itself so the
	// token never reaches another host.
	HTTPClient *http.Client
}

// settings are Options with every default filled in.
type settings struct {
	Options
	repoType RepoType
}

func envTrue(name string) bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(name))) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// hfHome follows huggingface_hub: $HF_HOME, else $XDG_CACHE_HOME/huggingface,
// else ~/.cache/huggingface.
func hfHome() string {
	if h := os.Getenv("HF_HOME"); h != "" {
		return h
	}
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "huggingface")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "."
	}
	return filepath.Join(home, ".cache", "huggingface")
}

// DefaultCacheDir is the hub cache huggingface_hub would use in this
// environment.
func DefaultCacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HUGGINGFACE_HUB_CACHE"); d != "" {
		return d
	}
	return filepath.Join(hfHome(), "hub")
}

// defaultToken reads the token the way huggingface_hub does; a missing token
// file is not an error (public repos need none).
func defaultToken() string {
	for _, name := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if t := strings.TrimSpace(os.Getenv(name)); t != "" {
			return t
		}
	}
	path := os.Getenv("HF_TOKEN_PATH")
	if path == "" {
		path = filepath.Join(hfHome(), "token")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (o Options) resolve() (settings, error) {
	s := settings{Options: o}
	if s.Revision == "" {
		s.Revision = "main"
	}
	switch s.RepoType {
	case "", Model:
		s.repoType = Model
	case Dataset:
		s.repoType = Dataset
	default:
		return s, fmt.Errorf("repo type %q is not supported; use %q or %q", o.RepoType, Model, Dataset)
	}
	if s.Token == "" {
		s.Token = defaultToken()
	}
	if s.Endpoint == "" {
		s.Endpoint = os.Getenv("HF_ENDPOINT")
	}
	if s.Endpoint == "" {
		s.Endpoint = DefaultEndpoint
	}
	s.Endpoint = strings.TrimRight(s.Endpoint, "/")
	if s.CacheDir == "" {
		s.CacheDir = DefaultCacheDir()
	}
	if envTrue("HF_HUB_OFFLINE") {
		s.Offline = true
	}
	if s.AllowPatterns == nil && s.repoType == Model {
		s.AllowPatterns = DefaultModelPatterns
	}
	if s.HTTPClient == nil {
		s.HTTPClient = http.DefaultClient
	}
	return s, nil
}
