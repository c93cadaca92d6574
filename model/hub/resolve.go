package hub

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Resolve turns id into a local directory holding the repository's files,
// trying in order: id as a local directory; a complete snapshot in the hub
// cache for opts.Revision (found through refs/<revision>, without network);
// a download from the hub into the cache. It is what a config's
// model = "Qwen/Qwen3-0.6B" goes through.
func Resolve(ctx context.Context, id string, opts Options) (string, error) {
	if st, err := os.Stat(id); err == nil && st.IsDir() {
		return filepath.Clean(id), nil
	}
	s, err := opts.resolve()
	if err != nil {
		return "", fmt.Errorf("%s: %w", id, err)
	}
	if !validRepoID(id) || looksLikePath(id) {
		return "", s.errorf(id, "", ErrBadInput,
			"not a local directory, and not a hub id like Qwen/Qwen3-0.6B; check the path or the id")
	}
	if dir, missing := s.cachedSnapshot(id); missing == "" {
		return dir, nil
	} else if s.Offline {
		return "", s.notCached(id, missing)
	}
	return download(ctx, &s, id)
}

// looksLikePath catches ids that are clearly meant as paths ("./m", "~/m"),
// so a typo in a path is reported as a missing directory, not sent to the hub.
func looksLikePath(id string) bool {
	return strings.HasPrefix(id, ".") || strings.HasPrefix(id, "~") || strings.HasPrefix(id, "/")
}

// cachedSnapshot finds the snapshot for s.Revision and reports the first
// file it lacks ("" when complete).
func (s *settings) cachedSnapshot(id string) (dir, missing string) {
	rc := newRepoCache(s, id)
	commit, ok := rc.commitFor(s.Revision)
	if !ok {
		return "", "revision " + s.Revision
	}
	dir = rc.snapshotDir(commit)
	return dir, s.missingFile(dir)
}

func (s *settings) notCached(id, missing string) *Error {
	return s.errorf(id, "", ErrNotCached,
		"%s is not in the cache %s and offline mode (HF_HUB_OFFLINE) is on; unset HF_HUB_OFFLINE, or run `grpo download %s%s` where the hub is reachable",
		missing, newRepoCache(s, id).root, id, s.downloadFlags())
}

// downloadFlags are the `grpo download` flags that reproduce s.
func (s *settings) downloadFlags() string {
	var f string
	if s.Revision != "main" {
		f += " --revision " + s.Revision
	}
	if s.repoType != Model {
		f += " --repo-type " + string(s.repoType)
	}
	return f
}

// Download fetches the files of repo id at opts.Revision that
// opts.AllowPatterns select into the cache and returns the snapshot
// directory. Unlike Resolve it always asks the hub which commit the
// revision points at now; files already in the cache are not fetched again.
// In offline mode it returns the cached snapshot or ErrNotCached.
func Download(ctx context.Context, id string, opts Options) (string, error) {
	s, err := opts.resolve()
	if err != nil {
		return "", fmt.Errorf("%s: %w", id, err)
	}
	if !validRepoID(id) {
		return "", s.errorf(id, "", ErrBadInput, "not a hub id like Qwen/Qwen3-0.6B; check the id")
	}
	if s.Offline {
		dir, missing := s.cachedSnapshot(id)
		if missing != "" {
			return "", s.notCached(id, missing)
		}
		return dir, nil
	}
	return download(ctx, &s, id)
}

func download(ctx context.Context, s *settings, id string) (string, error) {
	c, err := newClient(s)
	if err != nil {
		return "", err
	}
	listing, err := c.listRevision(ctx, id, s.Revision)
	if err != nil {
		return "", err
	}
	var files, all []string
	for _, sib := range listing.Siblings {
		all = append(all, sib.RFilename)
		if matchAny(s.AllowPatterns, sib.RFilename) {
			files = append(files, sib.RFilename)
		}
	}
	if len(files) == 0 {
		if len(all) > 8 {
			all = append(all[:8], "…")
		}
		return "", s.errorf(id, "", ErrNotFound,
			"no file at revision %q matches %s (the repo has: %s); check the id or the include patterns",
			s.Revision, strings.Join(s.AllowPatterns, ","), strings.Join(all, ", "))
	}
	rc := newRepoCache(s, id)
	for _, f := range files {
		// Every file at the listed commit, so the snapshot is one consistent
		// revision even if the branch moves meanwhile.
		if _, err := c.fileAt(ctx, rc, id, listing.SHA, f); err != nil {
			return "", err
		}
	}
	// Written last: the ref announces a snapshot only once it is complete.
	if err := rc.writeRef(s.Revision, listing.SHA); err != nil {
		return "", s.errorf(id, "", ErrTransfer, "cannot write %s: %v", rc.refPath(s.Revision), err)
	}
	return rc.snapshotDir(listing.SHA), nil
}

// DownloadFile returns the local path of one file of repo id at
// opts.Revision, from the cache when there and otherwise downloaded into it
// (a branch or tag is checked against the hub unless offline, as
// huggingface_hub's hf_hub_download does). Datasets use it for single
// parquet or JSONL files.
func DownloadFile(ctx context.Context, id, file string, opts Options) (string, error) {
	s, err := opts.resolve()
	if err != nil {
		return "", fmt.Errorf("%s: %w", id, err)
	}
	if !validRepoID(id) {
		return "", s.errorf(id, file, ErrBadInput, "not a hub id like Qwen/Qwen3-0.6B; check the id")
	}
	if file == "" || !filepath.IsLocal(filepath.FromSlash(file)) || strings.Contains(file, `\`) {
		return "", s.errorf(id, file, ErrBadInput, "file name must be a relative path inside the repo, like config.json or data/train.parquet")
	}
	rc := newRepoCache(&s, id)
	if s.Offline {
		if commit, ok := rc.commitFor(s.Revision); ok && exists(rc.pointerPath(commit, file)) {
			return rc.pointerPath(commit, file), nil
		}
		return "", s.errorf(id, file, ErrNotCached,
			"not in the cache %s at revision %q and offline mode (HF_HUB_OFFLINE) is on; unset HF_HUB_OFFLINE to download it", rc.root, s.Revision)
	}
	c, err := newClient(&s)
	if err != nil {
		return "", err
	}
	return c.fileAt(ctx, rc, id, s.Revision, file)
}
