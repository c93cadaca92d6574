//go:build !unix

package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// lock creates the lock file exclusively where flock does not exist. A
// process that dies without unlocking leaves it behind, so the message
// names the PID it records and says to delete the file if that process is
// gone.
func lock(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if errors.Is(err, fs.ErrExist) {
		e := &BusyError{Dir: dir, PID: holderPID(path)}
		return nil, fmt.Errorf("%w (if that process is gone, delete %s)", e, path)
	}
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	if err := recordPID(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return f, nil
}

func unlock(f *os.File) {
	name := f.Name()
	f.Close()
	os.Remove(name)
}
