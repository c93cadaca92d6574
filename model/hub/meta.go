package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// fileMeta is what a HEAD on a resolve URL says about one file.
type fileMeta struct {
	commit string // X-Repo-Commit
	etag   string // blob name: git sha1, or sha256 for LFS files
	size   int64  // -1 when the hub did not say
	url    string // where to GET the bytes (a CDN for LFS files)
}

// normalizeETag strips the weak marker and quotes the hub puts around it.
func normalizeETag(tag string) string {
	tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
	return strings.Trim(tag, `"`)
}

// transportError is the one-line message for a request that never got an
// answer, even after retries.
func (c *client) transportError(repo, file string, err error) error {
	if ctxErr := contextError(err); ctxErr != nil {
		return c.s.errorf(repo, file, ctxErr, "interrupted (%v)", err)
	}
	return c.s.errorf(repo, file, ErrTransfer,
		"cannot reach %s: %v; check the network or HF_ENDPOINT, or set HF_HUB_OFFLINE=1 to use only the cache", c.s.Endpoint, err)
}

// head fetches a file's metadata. LFS files answer with a redirect to a
// CDN; the redirect response itself carries X-Linked-Etag and X-Linked-Size
// (the ETag of the redirect is not the file's), so it is not followed.
func (c *client) head(ctx context.Context, repo, rev, file string) (*fileMeta, error) {
	u := c.resolveURL(repo, rev, file)
	// identity: a compressed response would report the compressed length.
	h := http.Header{"Accept-Encoding": {"identity"}}
	resp, err := c.doRetry(ctx, http.MethodHead, u, h, false)
	if err != nil {
		return nil, c.transportError(repo, file, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return nil, c.s.statusError(repo, file, resp)
	}
	m := &fileMeta{commit: resp.Header.Get("X-Repo-Commit"), size: -1, url: u}
	m.etag = normalizeETag(resp.Header.Get("X-Linked-Etag"))
	if m.etag == "" {
		m.etag = normalizeETag(resp.Header.Get("ETag"))
	}
	sizeHeader := resp.Header.Get("X-Linked-Size")
	if sizeHeader == "" && resp.StatusCode < 300 {
		sizeHeader = resp.Header.Get("Content-Length")
	}
	if n, err := strconv.ParseInt(sizeHeader, 10, 64); err == nil && n >= 0 {
		m.size = n
	}
	if resp.StatusCode >= 300 {
		loc, err := url.Parse(resp.Request.URL.String())
		if err == nil {
			if next, err := loc.Parse(resp.Header.Get("Location")); err == nil {
				m.url = next.String()
			}
		}
	}
	// An etag becomes a file name in blobs/; refuse anything that could
	// escape that folder.
	if !isCommit(m.commit) || m.etag == "" || strings.ContainsAny(m.etag, `/\`) || m.etag == "." || m.etag == ".." {
		return nil, c.s.errorf(repo, file, ErrTransfer,
			"%s answered without a valid X-Repo-Commit/ETag (commit %q, etag %q); is HF_ENDPOINT a Hugging Face hub?", c.s.Endpoint, m.commit, m.etag)
	}
	return m, nil
}

// repoListing is the part of /api/{models,datasets}/{id}/revision/{rev} grpo uses.
type repoListing struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		RFilename string `json:"rfilename"`
	} `json:"siblings"`
}

// listRevision asks the hub which commit rev points at and which files it has.
func (c *client) listRevision(ctx context.Context, repo, rev string) (*repoListing, error) {
	u := fmt.Sprintf("%s/api/%ss/%s/revision/%s", c.s.Endpoint, c.s.repoType, repo, url.PathEscape(rev))
	resp, err := c.doRetry(ctx, http.MethodGet, u, nil, true)
	if err != nil {
		return nil, c.transportError(repo, "", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.s.statusError(repo, "", resp)
	}
	var l repoListing
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&l); err != nil {
		return nil, c.s.errorf(repo, "", ErrTransfer, "unreadable file listing from %s: %v; try again later", u, err)
	}
	if !isCommit(l.SHA) {
		return nil, c.s.errorf(repo, "", ErrTransfer, "file listing from %s has no commit sha; is HF_ENDPOINT a Hugging Face hub?", u)
	}
	return &l, nil
}
