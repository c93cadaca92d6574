//go:build unix

package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lock takes the run directory's exclusive flock without waiting: a run
// directory has one writer, and a second one should hear so at once. The
// kernel drops a flock when its process dies, so the lock of a killed run
// is never stale: the next writer takes it and overwrites the dead PID.
func lock(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, &BusyError{Dir: dir, PID: holderPID(path)}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("run directory: locking %s: %w", path, err)
	}
	if err := recordPID(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return f, nil
}

// unlock releases the lock (closing the file would too; the explicit
// unlock documents it). The file stays: removing it would let a waiting
// process lock an unlinked inode while a third creates a new one.
func unlock(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}
