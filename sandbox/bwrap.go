package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// launcher turns a Config into the command lines that start sandboxes.
type launcher struct {
	cfg     Config
	bwrap   string // "" in unsafe mode
	prlimit string
	unsafe  bool
	cgroup  *cgroupBase // nil where cgroup v2 limits are not available
}

func newLauncher(cfg Config) (launcher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return launcher{}, err
	}
	l := launcher{cfg: cfg}
	if l.unsafe, err = unsafeOptIn(cfg.Logf); err != nil {
		return l, err
	}
	if l.prlimit, err = prlimitPath(); err != nil {
		return l, err
	}
	if !l.unsafe {
		if l.bwrap, err = cfg.bwrapPath(); err != nil {
			return l, err
		}
	}
	l.cgroup = cgroupFor(cfg)
	return l, nil
}

// ownerMark is set in the environment of every process the sandbox starts
// (bwrap itself, and everything inside), so a process-table scan can find
// anything left behind. It is no secret: it names this process.
var ownerMark = "GRPO_SANDBOX_OWNER=" + strconv.Itoa(os.Getpid())

// innerEnv is the whole environment inside the sandbox: no variable of the
// parent crosses, so no token or key can leak. The thread counts keep
// OpenBLAS and OpenMP from starting a thread per host core against RLIMIT_NPROC.
func (l launcher) innerEnv(home string) []string {
	return []string{
		"PATH=/usr/bin:/bin",
		"HOME=" + home,
		"TMPDIR=" + home,
		"LANG=C.UTF-8",
		"OPENBLAS_NUM_THREADS=1",
		"OMP_NUM_THREADS=1",
		"MKL_NUM_THREADS=1",
		ownerMark,
	}
}

// rlimitArgs is prlimit's command line: soft and hard limits alike, set on
// the sandboxed program itself (prlimit execs it) after bwrap has created the
// user namespace, so RLIMIT_NPROC counts this sandbox's processes only.
func (l launcher) rlimitArgs(argv []string) []string {
	c := l.cfg
	// The hard CPU limit is a second past the soft one: at the soft limit the
	// kernel sends SIGXCPU, which says why the code died; at a hard limit
	// equal to it, SIGKILL would come first and say nothing.
	cpu := int64(c.CPUTime.Seconds())
	a := []string{l.prlimit,
		"--cpu=" + strconv.FormatInt(cpu, 10) + ":" + strconv.FormatInt(cpu+1, 10),
		"--as=" + strconv.FormatInt(c.AddressSpace, 10),
		"--fsize=" + strconv.FormatInt(c.FileSize, 10),
		"--nofile=" + strconv.Itoa(c.OpenFiles),
		"--nproc=" + strconv.Itoa(c.Procs),
		"--core=0",
		"--"}
	return append(a, argv...)
}

// bwrapArgs is bubblewrap's command line for running argv.
func (l launcher) bwrapArgs(argv []string) []string {
	c := l.cfg
	a := []string{
		// Every namespace: user (no capabilities outside), pid (pid 1 is
		// bwrap's reaper; when the program exits, the kernel kills all that is
		// left), net (loopback only, down), ipc, uts, cgroup. No nested user
		// namespaces, so the code cannot unshare its way to new privileges.
		"--unshare-all", "--unshare-user", "--disable-userns",
		// If grpo dies, the sandbox dies; setsid keeps the code off the
		// controlling terminal (TIOCSTI).
		"--die-with-parent", "--new-session",
		"--hostname", "sandbox",
		"--clearenv",
	}
	for _, kv := range l.innerEnv("/tmp") {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	a = append(a, "--ro-bind", "/usr", "/usr")
	// The top-level system dirs: symlinks into /usr on merged-/usr systems
	// (Debian 12+), read-only binds on older layouts.
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if target, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", target, d)
		} else if st, err := os.Stat(d); err == nil && st.IsDir() {
			a = append(a, "--ro-bind", d, d)
		}
	}
	// /etc as far as python3 and its libraries need it: the loader's cache
	// (multiarch libraries are found only through it), alternatives (libblas
	// for numpy), Python's sitecustomize, the time zone. Nothing else: no
	// passwd, no hosts, no credentials.
	for _, f := range etcFiles() {
		a = append(a, "--ro-bind", f, f)
	}
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev",
		// multiprocessing needs /dev/shm; give it its own bounded tmpfs and make
		// the rest of /dev (an unbounded tmpfs) read-only.
		"--size", strconv.FormatInt(c.TmpSize, 10), "--tmpfs", "/dev/shm",
		"--remount-ro", "/dev",
		"--size", strconv.FormatInt(c.TmpSize, 10), "--tmpfs", "/tmp")
	// After the /tmp tmpfs, which would otherwise hide a ReadOnly path
	// under /tmp (an environment in a temporary directory).
	for _, p := range c.ReadOnly {
		a = append(a, "--ro-bind", p, p)
	}
	a = append(a,
		// bwrap's root is a tmpfs too: read-only, so the only writable places
		// are the two bounded tmpfs mounts.
		"--remount-ro", "/",
		"--chdir", "/tmp",
		"--")
	a = append(a, l.rlimitArgs(argv)...)
	if m := c.mutate; m != nil && m.args != nil {
		a = m.args(a)
	}
	return a
}

// etcFiles lists the /etc entries the sandbox binds, those that exist.
func etcFiles() []string {
	var out []string
	for _, f := range []string{"/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime"} {
		if _, err := os.Lstat(f); err == nil {
			out = append(out, f)
		}
	}
	py, _ := filepath.Glob("/etc/python3*")
	return append(out, py...)
}

// cgroupSeq numbers this process's sandbox cgroups.
var cgroupSeq atomic.Int64

// describe says which isolation is in effect, for logs and docs.
func (l launcher) describe() string {
	if l.unsafe {
		return fmt.Sprintf("%s=%s: no namespaces; rlimits and a cleared environment only", modeEnv, unsafeMode)
	}
	cg := "cgroup v2 limits: off (" + cgroupReason(l.cfg) + ")"
	if l.cgroup != nil {
		cg = "cgroup v2 limits under " + l.cgroup.dir
	}
	return "bubblewrap (all namespaces), rlimits via prlimit, " + cg
}
