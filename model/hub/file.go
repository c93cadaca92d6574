package hub

import (
	"context"
	"path/filepath"
)

// fileAt makes file at rev present in the snapshot and returns its path:
// HEAD for commit and etag, reuse the blob if another snapshot already has
// it, else download it under the blob's lock, then link the snapshot entry
// and record the ref.
func (c *client) fileAt(ctx context.Context, rc *repoCache, repo, rev, file string) (string, error) {
	if !filepath.IsLocal(filepath.FromSlash(file)) {
		return "", c.s.errorf(repo, file, ErrTransfer, "the hub listed a file outside the repo; refusing to write it")
	}
	if isCommit(rev) && exists(rc.pointerPath(rev, file)) {
		return rc.pointerPath(rev, file), nil // a commit's files never change
	}
	m, err := c.head(ctx, repo, rev, file)
	if err != nil {
		return "", err
	}
	pointer := rc.pointerPath(m.commit, file)
	if !exists(pointer) {
		blob := rc.blobPath(m.etag)
		if !exists(blob) {
			unlock, err := lockFile(ctx, rc.lockPath(m.etag))
			if err != nil {
				if ce := contextError(err); ce != nil {
					return "", c.s.errorf(repo, file, ce, "interrupted while waiting for another download of this file")
				}
				return "", c.s.errorf(repo, file, ErrTransfer, "cannot lock %s: %v; check permissions of the cache", rc.lockPath(m.etag), err)
			}
			// Another process may have finished it while we waited.
			if !exists(blob) {
				err = c.fetchBlob(ctx, repo, file, m, blob)
			}
			unlock()
			if err != nil {
				return "", err
			}
		}
		if err := linkPointer(blob, pointer); err != nil {
			return "", c.s.errorf(repo, file, ErrTransfer, "cannot add the file to the snapshot: %v; check permissions of %s", err, rc.root)
		}
	}
	if err := rc.writeRef(rev, m.commit); err != nil {
		return "", c.s.errorf(repo, file, ErrTransfer, "cannot write %s: %v", rc.refPath(rev), err)
	}
	return pointer, nil
}
