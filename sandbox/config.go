package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Config holds a sandbox's limits and where its programs live. The zero value
// is usable: [Config.withDefaults] fills every zero field.
type Config struct {
	// Python is the interpreter, /usr/bin/python3 by default: Debian's, which
	// has python3-numpy/sympy/scipy. A `python3` on PATH may be a pyenv shim
	// without them, so PATH is not searched.
	Python string
	// Bwrap is the bubblewrap binary; "" looks for bwrap on PATH.
	Bwrap string
	// ReadOnly lists extra host paths bound read-only at the same place
	// (a custom tool's script directory, a Python outside /usr). Everything
	// bound must be readable by the sandbox's user (see UID).
	ReadOnly []string

	// Timeout is the wall-clock limit of one cell or command (default 10 s).
	Timeout time.Duration
	// StartTimeout bounds starting an interpreter, preloads included (default 30 s).
	StartTimeout time.Duration
	// CPUTime is RLIMIT_CPU for each process: an interpreter's whole life
	// (one episode) or one command (default 60 s).
	CPUTime time.Duration
	// AddressSpace is RLIMIT_AS per process in bytes (default 1 GiB).
	AddressSpace int64
	// FileSize is RLIMIT_FSIZE in bytes: the largest file the code may write,
	// and with it the most a cell can print before writes fail (default 16 MiB).
	FileSize int64
	// OpenFiles is RLIMIT_NOFILE (default 256).
	OpenFiles int
	// Procs is RLIMIT_NPROC inside the sandbox's user namespace, threads
	// included, and pids.max where a cgroup is used (default 32). The kernel
	// does not apply RLIMIT_NPROC to uid 0, which is one reason a root grpo
	// runs sandboxes as UID.
	Procs int
	// Memory is memory.max of the sandbox's cgroup where cgroup v2 is
	// delegated (default 1 GiB); elsewhere AddressSpace × Procs bounds it.
	Memory int64
	// TmpSize is the size of the private tmpfs at /tmp, the work dir (default 64 MiB).
	TmpSize int64
	// MaxOutput caps each of stdout and stderr kept per cell or command, in
	// bytes (default 32 KiB); more sets Result.Truncated.
	MaxOutput int
	// Preload lists modules an interpreter imports while it warms up, so a
	// cell's `import sympy` is instant; they are imported, not bound to names.
	Preload []string
	// UID and GID are the ids sandboxes run as when grpo runs as root
	// (default 65534, nobody): a root-owned sandbox would keep capabilities in
	// bwrap and escape RLIMIT_NPROC.
	UID, GID int
	// Cgroup is a cgroup v2 directory whose subtree has the memory and pids
	// controllers enabled and that grpo may create children in; "" detects one
	// (GRPO_SANDBOX_CGROUP overrides), "-" turns cgroups off.
	Cgroup string
	// Logf receives the one-time notes (cgroup skipped and why, unsafe mode);
	// nil uses the log package.
	Logf func(format string, args ...any)

	// mutate lets the package's own tests plant a weakened configuration and
	// show the hostile suite catches it; nil in every real use.
	mutate *mutation
}

// mutation is a test-only weakening of the sandbox.
type mutation struct {
	args       func([]string) []string // rewrites bwrap's arguments
	inheritEnv bool                    // hands bwrap the parent's environment
}

// withDefaults returns c with every zero field filled and paths resolved.
func (c Config) withDefaults() (Config, error) {
	if c.Python == "" {
		c.Python = "/usr/bin/python3"
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 30 * time.Second
	}
	if c.CPUTime == 0 {
		c.CPUTime = 60 * time.Second
	}
	if c.AddressSpace == 0 {
		c.AddressSpace = 1 << 30
	}
	if c.FileSize == 0 {
		c.FileSize = 16 << 20
	}
	if c.OpenFiles == 0 {
		c.OpenFiles = 256
	}
	if c.Procs == 0 {
		c.Procs = 32
	}
	if c.Memory == 0 {
		c.Memory = 1 << 30
	}
	if c.TmpSize == 0 {
		c.TmpSize = 64 << 20
	}
	if c.MaxOutput == 0 {
		c.MaxOutput = 32 << 10
	}
	if c.UID == 0 {
		c.UID = 65534
	}
	if c.GID == 0 {
		c.GID = 65534
	}
	if c.Logf == nil {
		c.Logf = defaultLogf
	}
	if c.CPUTime < time.Second {
		return c, fmt.Errorf("sandbox: CPUTime %v is under RLIMIT_CPU's one-second granularity", c.CPUTime)
	}
	if c.Timeout < 0 || c.AddressSpace < 0 || c.FileSize < 0 || c.OpenFiles < 0 || c.Procs < 0 || c.Memory < 0 || c.TmpSize < 0 || c.MaxOutput < 0 {
		return c, fmt.Errorf("sandbox: negative limit in %+v", c)
	}
	for _, m := range c.Preload {
		if !isModuleName(m) {
			return c, fmt.Errorf("sandbox: Preload %q is not a module name", m)
		}
	}
	py, err := filepath.EvalSymlinks(c.Python)
	if err != nil {
		return c, fmt.Errorf("sandbox: python %s not found (install Debian's python3 python3-numpy python3-sympy python3-scipy, or set Config.Python): %v", c.Python, err)
	}
	if !c.visible(py) {
		return c, fmt.Errorf("sandbox: python %s (%s) is outside the sandbox's read-only dirs; add its prefix to Config.ReadOnly", c.Python, py)
	}
	for _, p := range c.ReadOnly {
		if !filepath.IsAbs(p) {
			return c, fmt.Errorf("sandbox: ReadOnly path %q is not absolute", p)
		}
	}
	return c, nil
}

// visible says whether host path p (resolved) is bound inside the sandbox.
func (c Config) visible(p string) bool {
	for _, dir := range append([]string{"/usr"}, c.ReadOnly...) {
		if p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/") {
			return true
		}
	}
	return false
}

// bwrapPath finds bubblewrap or says how to get it.
func (c Config) bwrapPath() (string, error) {
	name := c.Bwrap
	if name == "" {
		name = "bwrap"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: bubblewrap is not installed (%v); install it (apt-get install bubblewrap), or set %s=%s to run model code without isolation", ErrUnavailable, err, modeEnv, unsafeMode)
	}
	return p, nil
}

// prlimitPath is util-linux's prlimit, which sets the rlimits inside the
// sandbox; util-linux is Essential in Debian, so it is always there.
func prlimitPath() (string, error) {
	for _, p := range []string{"/usr/bin/prlimit", "/bin/prlimit"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: prlimit (util-linux) not found in /usr/bin", ErrUnavailable)
}

func isModuleName(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" || (part[0] >= '0' && part[0] <= '9') {
			return false
		}
		for _, r := range part {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return false
			}
		}
	}
	return true
}
