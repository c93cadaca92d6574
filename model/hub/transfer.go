package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/internal/atomicfile"
)

func contextError(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	return nil
}

// fetchBlob downloads m into blob. Bytes go to blob.incomplete, which a
// later call (or the next attempt here) resumes with a Range request; the
// finished file is checked against the announced size and, for LFS files
// whose etag is a sha256, against that hash, then synced and renamed into
// place, so blobs/<etag> only ever holds a complete, verified file.
// The caller holds the blob's lock.
func (c *client) fetchBlob(ctx context.Context, repo, file string, m *fileMeta, blob string) error {
	partial := blob + ".incomplete"
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return c.s.errorf(repo, file, ErrTransfer, "cannot create the cache folder: %v; check permissions of %s or set HF_HUB_CACHE", err, c.s.CacheDir)
	}
	prog := &progressReporter{report: c.s.Progress, file: file, total: m.size}
	prog.set(0)
	var lastErr error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if attempt > 1 {
			if err := backoff(ctx, attempt-1); err != nil {
				return c.s.errorf(repo, file, err, "interrupted; the partial download %s is kept and resumes next time", partial)
			}
		}
		done, err := c.transferOnce(ctx, repo, file, m, partial, prog)
		if err == nil {
			break
		}
		var he *Error
		if errors.As(err, &he) {
			return he // a definite answer from the hub (401, 404, corrupt): no retry
		}
		if ctxErr := contextError(err); ctxErr != nil {
			return c.s.errorf(repo, file, ctxErr, "interrupted after %d bytes; the partial download %s is kept and resumes next time", done, partial)
		}
		lastErr = fmt.Errorf("stopped at %d of %d bytes: %v", done, m.size, err)
		if attempt == maxAttempts {
			return c.s.errorf(repo, file, ErrTransfer,
				"download failed after %d attempts (%v); the partial file %s is kept: run the command again to resume", maxAttempts, lastErr, partial)
		}
	}
	if err := atomicfile.Rename(partial, blob); err != nil {
		return c.s.errorf(repo, file, ErrTransfer, "cannot move the finished download into the cache: %v", err)
	}
	prog.finish(m.size)
	return nil
}

// transferOnce makes one attempt: it continues partial from where it ends,
// and on success leaves partial complete, verified and synced. It returns
// how many bytes partial holds. Errors of type *Error are final; others
// are transient and worth another attempt.
func (c *client) transferOnce(ctx context.Context, repo, file string, m *fileMeta, partial string, prog *progressReporter) (int64, error) {
	f, err := os.OpenFile(partial, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return 0, c.s.errorf(repo, file, ErrTransfer, "cannot write the cache: %v; check permissions of %s or set HF_HUB_CACHE", err, c.s.CacheDir)
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	if m.size >= 0 && have > m.size {
		// Longer than the file can be: not a prefix of it. Start over.
		if err := restart(f); err != nil {
			return 0, err
		}
		have = 0
	}
	var sum hash.Hash
	if sha256Re.MatchString(m.etag) {
		sum = sha256.New()
		// Hash the prefix already on disk so the final check covers the
		// whole file with one read.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, err
		}
		if _, err := io.CopyN(sum, f, have); err != nil {
			return 0, err
		}
	}
	if m.size < 0 || have < m.size {
		if have, err = c.receive(ctx, repo, file, m, f, have, sum, prog); err != nil {
			return have, err
		}
	}
	if m.size >= 0 && have != m.size {
		return have, fmt.Errorf("body ended early")
	}
	if sum != nil {
		if got := hex.EncodeToString(sum.Sum(nil)); got != m.etag {
			f.Close()
			os.Remove(partial)
			return 0, c.s.errorf(repo, file, ErrCorrupt,
				"downloaded bytes have sha256 %s, the hub announced %s; the file was discarded, run the command again", got, m.etag)
		}
	}
	if err := f.Sync(); err != nil {
		return have, err
	}
	return have, nil
}

// restart empties f so a download begins from byte 0.
func restart(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}

// receive GETs the bytes after have and appends them to f (positioned at
// its end), feeding sum and prog (the progress report). It returns the new length of f.
func (c *client) receive(ctx context.Context, repo, file string, m *fileMeta, f *os.File, have int64, sum hash.Hash, prog *progressReporter) (int64, error) {
	h := http.Header{"Accept-Encoding": {"identity"}}
	if have > 0 {
		h.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := c.do(ctx, http.MethodGet, m.url, h, true)
	if err != nil {
		return have, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		if start, ok := rangeStart(resp.Header.Get("Content-Range")); !ok || start != have {
			// The server sent some other range: the partial file cannot be
			// trusted to line up. Start over on the next attempt.
			if err := restart(f); err != nil {
				return have, err
			}
			return 0, fmt.Errorf("server answered Range bytes=%d- with %q", have, resp.Header.Get("Content-Range"))
		}
	case resp.StatusCode == http.StatusOK:
		if have > 0 { // the server ignored Range and sends the whole file
			if err := restart(f); err != nil {
				return have, err
			}
			if sum != nil {
				sum.Reset()
			}
			have = 0
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		if err := restart(f); err != nil {
			return have, err
		}
		return 0, fmt.Errorf("server refused Range bytes=%d-", have)
	case transientStatus(resp.StatusCode):
		return have, fmt.Errorf("HTTP %d from %s", resp.StatusCode, resp.Request.URL.Host)
	default:
		return have, c.s.statusError(repo, file, resp)
	}
	prog.set(have)
	var w io.Writer = f
	if sum != nil {
		w = io.MultiWriter(f, sum)
	}
	w = io.MultiWriter(w, prog)
	n, err := io.Copy(w, resp.Body)
	have += n
	if err != nil {
		return have, err
	}
	if m.size < 0 {
		m.size = have
	}
	return have, nil
}

// rangeStart parses the first byte of "bytes START-END/TOTAL".
func rangeStart(cr string) (int64, bool) {
	rest, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, false
	}
	startStr, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(startStr, 10, 64)
	return n, err == nil
}
