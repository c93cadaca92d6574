package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockName is the file in a run directory that its writer holds locked
// for as long as it runs. It records the holder's PID for the message a
// second writer gets; the lock itself, not the file, is what excludes.
const LockName = "run.lock"

// BusyError says that another live process holds a run directory.
type BusyError struct {
	Dir string
	PID int // 0 when the holder did not record one
}

func (e *BusyError) Error() string {
	holder := "another grpo process"
	if e.PID > 0 {
		holder = fmt.Sprintf("grpo process %d", e.PID)
	}
	return fmt.Sprintf("%s is in use by %s (lock %s); wait for it to end or stop it, or give another --output",
		e.Dir, holder, filepath.Join(e.Dir, LockName))
}

// holderPID reads the PID a lock file records; 0 if it holds none.
func holderPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// recordPID writes this process's PID into the held lock file f.
func recordPID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}
