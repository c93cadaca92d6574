package hub

import (
	"errors"
	"fmt"
	"net/http"
)

// Sentinel kinds of failure; every error Resolve, Download and DownloadFile
// return wraps one of them, so callers can branch with errors.Is while users
// read a single line that says what to do.
var (
	// ErrAuth: the hub refused access (HTTP 401/403): gated or private repo.
	ErrAuth = errors.New("access denied")
	// ErrNotFound: repo, revision or file does not exist (HTTP 404).
	ErrNotFound = errors.New("not found")
	// ErrNotCached: offline mode is on and the cache lacks what was asked for.
	ErrNotCached = errors.New("not cached")
	// ErrTransfer: the hub or the network failed, even after retries.
	ErrTransfer = errors.New("transfer failed")
	// ErrCorrupt: a downloaded file did not match the size or sha256 the hub
	// announced.
	ErrCorrupt = errors.New("corrupt download")
	// ErrBadInput: the id, revision, repo type or a setting is malformed.
	ErrBadInput = errors.New("bad input")
)

// Error is one failure about one repository (and, where it applies, one
// file in it). Its message is a single line: what failed and what to do.
type Error struct {
	RepoType RepoType
	Repo     string
	File     string // empty when the failure concerns the whole repo
	Kind     error  // one of the sentinels above
	Detail   string
}

func (e *Error) Error() string {
	where := fmt.Sprintf("%s %s", e.RepoType, e.Repo)
	if e.File != "" {
		where += ": " + e.File
	}
	return where + ": " + e.Detail
}

func (e *Error) Unwrap() error { return e.Kind }

// statusError turns a failed hub response into an Error. The hub's
// X-Error-Code header (RepoNotFound, RevisionNotFound, EntryNotFound,
// GatedRepo) refines the message where present. The hub answers 401, not
// 404, for a repo that does not exist when no token is sent, so a 401 must
// mention both possibilities.
func (s *settings) statusError(repo, file string, resp *http.Response) *Error {
	e := &Error{RepoType: s.repoType, Repo: repo, File: file}
	code := resp.Header.Get("X-Error-Code")
	status := fmt.Sprintf("HTTP %d from %s", resp.StatusCode, s.Endpoint)
	switch {
	case code == "RepoNotFound" && resp.StatusCode != http.StatusNotFound && s.Token == "":
		e.Kind = ErrAuth
		e.Detail = fmt.Sprintf("repository not found or private (%s); check the id, or set HF_TOKEN if it is private", status)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || code == "GatedRepo":
		e.Kind = ErrAuth
		if s.Token == "" {
			e.Detail = fmt.Sprintf("access denied (%s): the repository is gated or private and no token was sent; accept its terms at %s/%s and set HF_TOKEN", status, s.Endpoint, s.repoPath(repo))
		} else {
			e.Detail = fmt.Sprintf("access denied (%s): the token was refused or cannot read this gated/private repository; check HF_TOKEN and accept its terms at %s/%s", status, s.Endpoint, s.repoPath(repo))
		}
	case resp.StatusCode == http.StatusNotFound:
		e.Kind = ErrNotFound
		switch code {
		case "RepoNotFound":
			e.Detail = fmt.Sprintf("repository not found (%s); check the id", status)
		case "RevisionNotFound":
			e.Detail = fmt.Sprintf("revision %q not found (%s); check the revision", s.Revision, status)
		case "EntryNotFound":
			e.Detail = fmt.Sprintf("file not found at revision %q (%s); check the file name", s.Revision, status)
		default:
			e.Detail = fmt.Sprintf("not found (%s); check the id, the revision %q and the file name", status, s.Revision)
		}
	default:
		e.Kind = ErrTransfer
		e.Detail = fmt.Sprintf("unexpected %s; try again later", status)
	}
	return e
}

// repoPath is the repo's path on the hub's web site and resolve URLs.
func (s *settings) repoPath(repo string) string {
	if s.repoType == Dataset {
		return "datasets/" + repo
	}
	return repo
}

func (s *settings) errorf(repo, file string, kind error, format string, args ...any) *Error {
	return &Error{RepoType: s.repoType, Repo: repo, File: file, Kind: kind, Detail: fmt.Sprintf(format, args...)}
}
