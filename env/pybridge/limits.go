package pybridge

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// limits bound a python child and everything it starts. They are rlimits
// set with prlimit(2) on the child right after it starts and before grpo
// sends its first request (so before any environment code runs), and are
// inherited by its own children:
//
//   - RLIMIT_DATA (Memory bytes), not RLIMIT_AS: since Linux 4.7 it counts
//     the heap and every private writable mapping, which is what a runaway
//     environment grows, but not read-only file mappings (datasets' arrow
//     files) or reserved address space (CUDA), which RLIMIT_AS would refuse.
//   - RLIMIT_NPROC (the user's processes now + Procs): the kernel counts all
//     of a user's processes, so the bound is headroom over today's count.
//     It does not bind root, for whom only a cgroup's pids.max would.
type limits struct {
	Memory uint64
	Procs  uint64
}

func (o Options) limits() limits {
	l := limits{Memory: uint64(o.MaxMemory), Procs: uint64(o.MaxProcs)}
	if o.MaxMemory <= 0 {
		l.Memory = max(memTotal()/2, 2<<30)
	}
	if o.MaxProcs <= 0 {
		l.Procs = 1024
	}
	return l
}

// apply sets the limits on pid; a child already gone (a python that
// fails at once) needs none, and its exit says why.
func (l limits) apply(pid int) error {
	mem := unix.Rlimit{Cur: l.Memory, Max: l.Memory}
	if err := unix.Prlimit(pid, unix.RLIMIT_DATA, &mem, nil); errors.Is(err, unix.ESRCH) {
		return nil
	} else if err != nil {
		return fmt.Errorf("the python child runs without a memory limit: prlimit RLIMIT_DATA: %v", err)
	}
	n := l.Procs + userProcesses(os.Getuid())
	procs := unix.Rlimit{Cur: n, Max: n}
	if err := unix.Prlimit(pid, unix.RLIMIT_NPROC, &procs, nil); err != nil {
		return fmt.Errorf("the python child runs without a process limit: prlimit RLIMIT_NPROC: %v", err)
	}
	return nil
}

// memTotal is the machine's RAM in bytes (0 when /proc says nothing).
func memTotal() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// userProcesses counts the processes (threads included, as the kernel
// does for RLIMIT_NPROC) of uid.
func userProcesses(uid int) uint64 {
	dirs, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	var n uint64
	for _, d := range dirs {
		var st unix.Stat_t
		if unix.Stat(d, &st) == nil && int(st.Uid) == uid {
			n++
		}
	}
	return n
}
