package atomicfile

import (
	"errors"
	"os"
	"runtime"
	"syscall"
)

// The operations below are variables so that tests can observe and fail
// them; the package never replaces them itself.
var (
	rename   = os.Rename
	syncFile = func(f *os.File) error { return f.Sync() }
	syncDir  = syncDirectory
)

// syncDirectory fsyncs dir so that the entries made in it are durable.
// Filesystems that cannot fsync a directory (EINVAL, ENOTSUP) and Windows,
// whose NTFS journals directory entries itself, are not errors: there is
// nothing more to do there.
func syncDirectory(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}
