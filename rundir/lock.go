package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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

// holderPID reads the PID a lock file records; 0 if it holds none. The
// holder writes its PID just after it takes the lock, so a second writer
// that arrives in between would read an empty file: it waits up to
// pidWait for the PID to appear.
func holderPID(path string) int {
	deadline := time.Now().Add(pidWait)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			return 0
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pidWait bounds how long a refused writer waits for the holder's PID.
const pidWait = 2 * time.Second

// recordPID writes this process's PID into the held lock file f: over the
// old content first, then cut to length, so a reader never sees the file
// empty once a PID has been recorded (only, briefly, a longer old one's
// digits, which the new PID overwrites from the start).
func recordPID(f *os.File) error {
	b := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(b)))
}
