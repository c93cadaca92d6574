package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// WriteDir makes dir hold exactly what fill writes. fill writes into a
// fresh temporary directory beside dir, which is fsynced (every file and
// directory in it) and renamed into place; an existing dir is first moved
// aside and removed only after the new one is in place, and moved back if
// the new one cannot be. A crash therefore leaves dir complete (old or
// new), or absent with the complete old copy beside it, never half
// written.
//
// canReplace vets an existing dir before anything is touched, so that a
// mistyped path cannot delete unrelated files; nil lets any directory be
// replaced. An existing dir that is not a directory is never replaced.
func WriteDir(dir string, canReplace func(dir string) error, fill func(tmp string) error) (err error) {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s: exists and is not a directory", dir)
		}
		if canReplace != nil {
			if err := canReplace(dir); err != nil {
				return err
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err = os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err = fill(tmp); err != nil {
		return err
	}
	return commitDir(tmp, dir)
}

// commitDir renames the fully written directory tmp to final (both in the
// same parent), moving an existing final aside first and back on failure.
func commitDir(tmp, final string) error {
	if err := syncTree(tmp); err != nil {
		return err
	}
	parent := filepath.Dir(final)
	if _, err := os.Lstat(final); errors.Is(err, fs.ErrNotExist) {
		if err := rename(tmp, final); err != nil {
			return err
		}
		return syncParent(parent)
	}
	old := filepath.Join(parent, "."+filepath.Base(final)+".old-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := rename(final, old); err != nil {
		return err
	}
	if err := rename(tmp, final); err != nil {
		if rerr := rename(old, final); rerr != nil {
			return fmt.Errorf("%s: could not move the new copy into place (%v), and the previous copy is left at %s (%v)", final, err, old, rerr)
		}
		return err
	}
	if err := syncParent(parent); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

func syncParent(dir string) error {
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("%s: fsync: %w", dir, err)
	}
	return nil
}

// syncTree fsyncs every file and directory under dir, dir included, so
// that a fill which wrote with plain os calls is as durable as one that
// used this package.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if err := syncDir(p); err != nil {
				return fmt.Errorf("%s: fsync: %w", p, err)
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := syncFile(f); err != nil {
			return fmt.Errorf("%s: fsync: %w", p, err)
		}
		return nil
	})
}
