package hub

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// repoCache is one repository's folder in the hub cache.
type repoCache struct {
	cacheDir string
	folder   string // models--org--name
	root     string // cacheDir/folder
}

var (
	commitRe = regexp.MustCompile(`^[0-9a-f]{40}$`)
	sha256Re = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// repoIDRe is huggingface_hub's validate_repo_id: an optional namespace
	// and a name, each of word characters, '-' and '.'.
	repoIDRe = regexp.MustCompile(`^([A-Za-z0-9_.-]+/)?[A-Za-z0-9_.-]+$`)
)

func isCommit(rev string) bool { return commitRe.MatchString(rev) }

// validRepoID reports whether id is a hub id. "--" is refused because it is
// the separator in cache folder names; ".." because it would escape the cache.
func validRepoID(id string) bool {
	return len(id) <= 96 && repoIDRe.MatchString(id) &&
		!strings.Contains(id, "--") && !strings.Contains(id, "..") &&
		!strings.HasPrefix(id, ".") && !strings.HasSuffix(id, ".git") &&
		!strings.HasSuffix(id, ".")
}

func newRepoCache(s *settings, id string) *repoCache {
	folder := string(s.repoType) + "s--" + strings.ReplaceAll(id, "/", "--")
	return &repoCache{cacheDir: s.CacheDir, folder: folder, root: filepath.Join(s.CacheDir, folder)}
}

func (c *repoCache) refPath(rev string) string {
	return filepath.Join(c.root, "refs", filepath.FromSlash(rev))
}
func (c *repoCache) snapshotDir(commit string) string {
	return filepath.Join(c.root, "snapshots", commit)
}
func (c *repoCache) pointerPath(commit, file string) string {
	return filepath.Join(c.snapshotDir(commit), filepath.FromSlash(file))
}
func (c *repoCache) blobPath(etag string) string { return filepath.Join(c.root, "blobs", etag) }
func (c *repoCache) lockPath(etag string) string {
	return filepath.Join(c.cacheDir, ".locks", c.folder, etag+".lock")
}

// commitFor maps a revision to the commit the cache knows for it: a commit
// hash is itself, a branch or tag is read from refs/<rev>.
func (c *repoCache) commitFor(rev string) (string, bool) {
	if isCommit(rev) {
		return rev, true
	}
	b, err := os.ReadFile(c.refPath(rev))
	if err != nil {
		return "", false
	}
	commit := strings.TrimSpace(string(b))
	return commit, isCommit(commit)
}

// writeRef records that rev points at commit. huggingface_hub writes the
// bare hash without a newline; so do we, through a temp file and rename so a
// reader never sees a half-written ref.
func (c *repoCache) writeRef(rev, commit string) error {
	if rev == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(c.refPath(rev)), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(c.refPath(rev), []byte(commit), 0o644)
}

// exists reports whether path names a readable regular file, following
// symlinks: a snapshot entry whose blob was deleted does not exist.
func exists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

func tempName(path string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return path + ".tmp-" + hex.EncodeToString(b[:])
}

// linkPointer makes the snapshot entry pointer refer to blob: a relative
// symlink as huggingface_hub makes (so the cache can be moved), or a copy
// where the file system refuses symlinks. Either is created under a temp
// name and renamed into place, so the entry is never half there.
func linkPointer(blob, pointer string) error {
	if err := os.MkdirAll(filepath.Dir(pointer), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(pointer), blob)
	if err != nil {
		return err
	}
	tmp := tempName(pointer)
	if err := os.Symlink(rel, tmp); err == nil {
		if err := atomicfile.Rename(tmp, pointer); err != nil {
			os.Remove(tmp)
			return err
		}
		return nil
	}
	return atomicfile.CopyFile(pointer, blob)
}
