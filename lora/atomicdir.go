package lora

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// writeDirAtomic makes dir hold exactly what fill writes. fill writes into
// a fresh temporary directory beside dir (same filesystem), which is then
// renamed into place; an existing dir is first moved aside and removed only
// after the new one is in place. A crash therefore leaves dir either absent
// with the complete old copy beside it, or complete (old or new), never a
// half-written directory. canReplace vets an existing dir before anything
// is touched, so a mistyped path cannot delete unrelated files.
func writeDirAtomic(dir string, canReplace func(dir string) error, fill func(tmp string) error) (err error) {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	exists := false
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s: exists and is not a directory", dir)
		}
		if err := canReplace(dir); err != nil {
			return err
		}
		exists = true
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
	if err = syncPath(tmp); err != nil {
		return fmt.Errorf("%s: fsync: %v", tmp, err)
	}
	if !exists {
		if err = os.Rename(tmp, dir); err != nil {
			return err
		}
		syncPath(parent)
		return nil
	}
	old := filepath.Join(parent, "."+base+".old-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err = os.Rename(dir, old); err != nil {
		return err
	}
	if err = os.Rename(tmp, dir); err != nil {
		if rerr := os.Rename(old, dir); rerr != nil {
			return fmt.Errorf("%s: could not move the new copy into place (%v), and the previous copy is left at %s (%v)", dir, err, old, rerr)
		}
		return err
	}
	syncPath(parent)
	return os.RemoveAll(old)
}

// writeFileSync writes data to path and fsyncs it.
func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("%s: fsync: %v", path, err)
	}
	return f.Close()
}

// syncPath fsyncs a directory so the entries made in it are durable. Some
// filesystems refuse fsync on directories (EINVAL); that is not an error.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
