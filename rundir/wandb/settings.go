package wandb

import (
	"bufio"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// DefaultBaseURL is W&B's cloud API; WANDB_BASE_URL names a self-hosted
// server instead.
const DefaultBaseURL = "https://api.wandb.ai"

// Env reads environment variables; os.Getenv in a real run, a map in tests.
type Env func(string) string

// baseURL is WANDB_BASE_URL without a trailing slash, or the cloud API.
func (env Env) baseURL() string {
	if u := strings.TrimRight(env("WANDB_BASE_URL"), "/"); u != "" {
		return u
	}
	return DefaultBaseURL
}

// offlineByEnv says why the environment asks for no upload, "" if it
// does not: WANDB_MODE=offline (or its old name dryrun), or
// WANDB_OFFLINE=true as the SDK also reads.
func (env Env) offlineByEnv() string {
	switch m := strings.ToLower(env("WANDB_MODE")); m {
	case "offline", "dryrun":
		return "WANDB_MODE=" + m
	}
	if o := strings.ToLower(env("WANDB_OFFLINE")); o == "true" || o == "1" {
		return "WANDB_OFFLINE=" + o
	}
	return ""
}

// disabled reports WANDB_MODE=disabled: no W&B run at all.
func (env Env) disabled() bool { return strings.ToLower(env("WANDB_MODE")) == "disabled" }

// apiKey is WANDB_API_KEY, else the password of base's host in the netrc
// file (NETRC, else ~/.netrc), where `wandb login` stores it.
func (env Env) apiKey(base string) string {
	if k := strings.TrimSpace(env("WANDB_API_KEY")); k != "" {
		return k
	}
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	path := env("NETRC")
	if path == "" {
		home := env("HOME")
		if home == "" {
			return ""
		}
		path = filepath.Join(home, ".netrc")
	}
	return netrcPassword(path, u.Hostname())
}

// netrcPassword reads the password of machine host from a netrc file:
// whitespace-separated "machine H login L password P" entries.
func netrcPassword(path, host string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Split(bufio.ScanWords)
	var words []string
	for sc.Scan() {
		words = append(words, sc.Text())
	}
	inHost := false
	for i := 0; i+1 < len(words); i++ {
		switch words[i] {
		case "machine":
			inHost = words[i+1] == host
			i++
		case "default":
			inHost = true
		case "password":
			if inHost {
				return words[i+1]
			}
			i++
		}
	}
	return ""
}

// appURL is the web app for an API base URL, as wandb.util.app_url makes
// it: api.wandb.ai's app is wandb.ai, another api.X's is app.X, and a
// self-hosted server at any other name serves both at one address.
func appURL(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	if h, ok := strings.CutPrefix(u.Host, "api."); ok {
		if strings.HasPrefix(h, "wandb.") {
			u.Host = h
		} else {
			u.Host = "app." + h
		}
	}
	return strings.TrimRight(u.String(), "/")
}
