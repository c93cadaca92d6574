package atomicfile

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile replaces path with a file holding data, as os.WriteFile would
// make it (perm before the umask), atomically.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write replaces path with a file holding what fill writes, for output
// produced as a stream. fill writes into a buffered temporary file beside
// path; path is touched only after fill and the fsync have succeeded, and
// any failure removes the temporary file.
func Write(path string, perm fs.FileMode, fill func(w io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := createTemp(dir, "."+filepath.Base(path)+".tmp-", perm)
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(f, 64<<10)
	if err = fill(w); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return fmt.Errorf("%s: write: %w", path, err)
	}
	if err = syncFile(f); err != nil {
		return fmt.Errorf("%s: fsync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return err
	}
	return Rename(tmp, path)
}

// CopyFile replaces dst with a copy of src (symlinks followed), keeping
// src's permission bits, atomically.
func CopyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if err := Write(dst, st.Mode().Perm(), func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	}); err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}

// Rename moves from, a complete file the caller has already fsynced (a
// finished download), to to, and fsyncs the directories involved so that
// the move is durable.
func Rename(from, to string) error {
	if err := rename(from, to); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(to)); err != nil {
		return fmt.Errorf("%s: fsync: %w", filepath.Dir(to), err)
	}
	if fromDir := filepath.Dir(from); fromDir != filepath.Dir(to) {
		if err := syncDir(fromDir); err != nil {
			return fmt.Errorf("%s: fsync: %w", fromDir, err)
		}
	}
	return nil
}

// createTemp creates a new file prefix+random in dir with perm (before the
// umask); os.CreateTemp would always make it 0600.
func createTemp(dir, prefix string, perm fs.FileMode) (*os.File, error) {
	for range 10000 {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(filepath.Join(dir, prefix+hex.EncodeToString(b[:])), os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("%s: cannot find a free temporary name %s*", dir, prefix)
}
