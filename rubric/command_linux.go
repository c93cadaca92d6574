//go:build linux

package rubric

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// The ways to get a pid namespace, tried in order: plain CLONE_NEWPID
// (needs CAP_SYS_ADMIN: root outside a container), then inside a new user
// namespace (unprivileged, where the kernel allows it). A way the system
// refuses is not tried again.
type nsWay struct {
	flags   uintptr
	userNS  bool
	refused atomic.Bool
}

var nsWays = []*nsWay{
	{flags: syscall.CLONE_NEWPID},
	{flags: syscall.CLONE_NEWPID | syscall.CLONE_NEWUSER, userNS: true},
}

func (w *nsWay) refuse() { w.refused.Store(true) }

// namespaceFor sets attr up for the first way not yet refused and returns
// it, or nil when none is left (then the session alone isolates).
func namespaceFor(attr *syscall.SysProcAttr) *nsWay {
	for _, w := range nsWays {
		if w.refused.Load() {
			continue
		}
		attr.Cloneflags = w.flags
		if w.userNS {
			// The program keeps its uid and gid, mapped to themselves.
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
			attr.GidMappingsEnableSetgroups = false
		}
		return w
	}
	return nil
}

// namespaceRefused tells a refused namespace from a program that cannot
// run (not found, not executable), which no other way would fix.
func namespaceRefused(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS) || errors.Is(err, syscall.ENOSYS)
}

func inNamespace(cmd *exec.Cmd) bool {
	return cmd.SysProcAttr != nil && cmd.SysProcAttr.Cloneflags&syscall.CLONE_NEWPID != 0
}

// killMarked kills every process whose environment carries the run's
// marker: without a pid namespace, that is how a helper that left the
// session (setsid) is found. Killing a parent does not kill its children,
// which may fork meanwhile, so the scan repeats until it finds none three
// rounds running, a few milliseconds apart: a child caught between fork
// and exec can be missed by one scan (CI once saw `setsid -f sleep 31`
// outlive a run when the first empty round ended the search).
func killMarked(marker string) {
	needle := []byte(runMarkerKey + "=" + marker + "\x00")
	for round, quiet := 0, 0; round < 50 && quiet < 3; round++ {
		if quiet > 0 {
			time.Sleep(2 * time.Millisecond)
		}
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		found := false
		for _, d := range dirs {
			pid, err := strconv.Atoi(filepath.Base(d))
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile(d + "/environ") // empty for a zombie; denied for others' processes
			if err != nil || !bytes.Contains(env, needle) {
				continue
			}
			found = true
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if found {
			quiet = 0
		} else {
			quiet++
		}
	}
}
