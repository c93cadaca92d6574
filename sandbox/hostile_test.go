package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// The hostile-code suite: cells a model might write, by mistake or on
// purpose, each of which must be contained — the rollout gets an error text,
// the episode's next call works, and nothing the cell started survives the
// episode (TestMain and each case check the process table). The limits are
// small so the whole suite takes seconds.

func hostileConfig() Config {
	return Config{
		Timeout:      2 * time.Second, // seconds of margin on a loaded 2-core machine
		StartTimeout: 30 * time.Second,
		CPUTime:      2 * time.Second,
		AddressSpace: 256 << 20,
		FileSize:     8 << 20,
		Procs:        16,
		TmpSize:      16 << 20,
		MaxOutput:    4096,
	}
}

// world is what the cells probe for: things outside the sandbox.
type world struct {
	secret    string   // set in this process's environment
	hostDir   string   // a host directory a cell tries to write into
	hostPaths []string // host paths that must not exist inside
	listener  *net.TCPListener
}

func newWorld(t *testing.T) *world {
	w := &world{secret: fmt.Sprintf("s3cret-%d-%d", os.Getpid(), time.Now().UnixNano()), hostDir: t.TempDir()}
	// Open to everyone, so that only the sandbox stands between a cell and
	// this directory (the mutant that binds it must be able to write there).
	os.Chmod(filepath.Dir(w.hostDir), 0o755)
	os.Chmod(w.hostDir, 0o777)
	t.Setenv("GRPO_SANDBOX_TEST_SECRET", w.secret)
	wd, _ := os.Getwd()
	for _, p := range []string{os.Getenv("HOME"), wd, "/root", "/home", "/work", "/var", "/run", w.hostDir} {
		if _, err := os.Stat(p); err == nil && p != "/tmp" {
			w.hostPaths = append(w.hostPaths, p)
		}
	}
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	w.listener = l
	return w
}

func (w *world) port() int { return w.listener.Addr().(*net.TCPAddr).Port }

// accepted reports whether anyone connected to the listener.
func (w *world) accepted() bool {
	w.listener.SetDeadline(time.Now().Add(100 * time.Millisecond))
	c, err := w.listener.Accept()
	if err == nil {
		c.Close()
		return true
	}
	return false
}

// guardPidNS refuses to signal -1 unless the cell is in its own pid
// namespace: in a broken sandbox, kill -9 -1 would reach the host.
const guardPidNS = `import os
assert os.path.basename(open("/proc/1/cmdline", "rb").read().split(b"\0")[0]) == b"bwrap", "no pid namespace: not running kill -1 on the host"
`

type hostileCase struct {
	name  string
	cell  func(w *world) string
	kills bool // the cell ends its interpreter; the next call must restart
	// timeout, when set, replaces hostileConfig's wall-clock limit: a
	// case about memory whose cell imports a module (numpy: a second of
	// wall time or more on a loaded machine) must not end as a timeout.
	timeout time.Duration
	// check returns nil when the cell was contained; elapsed is its wall time.
	check func(w *world, r Result, elapsed time.Duration) error
}

func want(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}

var hostileCases = []hostileCase{
	{name: "fork bomb", cell: func(*world) string { return "import os\nwhile True:\n    os.fork()\n" },
		check: func(_ *world, r Result, _ time.Duration) error {
			return want(strings.Contains(r.Error, "BlockingIOError"), "want BlockingIOError from RLIMIT_NPROC, got %q", r.Error)
		}},
	{name: "memory bomb", cell: func(*world) string { return "blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 26))\n" },
		check: func(_ *world, r Result, _ time.Duration) error {
			return want(strings.Contains(r.Error, "MemoryError"), "want MemoryError from RLIMIT_AS, got %q", r.Error)
		}},
	{name: "memory bomb in numpy", timeout: 20 * time.Second, cell: func(*world) string { return "import numpy\nnumpy.ones(1 << 32)\n" },
		check: func(_ *world, r Result, _ time.Duration) error {
			return want(strings.Contains(r.Error, "MemoryError"), "want numpy's MemoryError, got %q", r.Error)
		}},
	// A busy loop meets two limits of 2 s at once: the wall clock and the
	// CPU time, which counts the interpreter's whole life (its start
	// included), so either may stop it first (CI saw the CPU limit at
	// 1.96 s). Either is containment; the wall clock alone is the next
	// case's, whose cell burns no CPU.
	{name: "infinite loop", kills: true, cell: func(*world) string { return "while True:\n    pass\n" },
		check: func(_ *world, r Result, elapsed time.Duration) error {
			wall := r.TimedOut && strings.Contains(r.Error, "TimeoutError")
			cpu := !r.TimedOut && strings.Contains(r.Error, "CPU time limit of 2s exceeded")
			return want((wall || cpu) && elapsed < 5*time.Second,
				"want a timeout or the CPU-time kill within 5s, got %+v after %v", r, elapsed)
		}},
	{name: "sleeping forever", kills: true, cell: func(*world) string { return "import time\ntime.sleep(3600)\n" },
		check: func(_ *world, r Result, elapsed time.Duration) error {
			return want(r.TimedOut && strings.Contains(r.Error, "TimeoutError") && elapsed >= 2*time.Second && elapsed < 5*time.Second,
				"want a timeout after 2s, got %+v after %v", r, elapsed)
		}},
	{name: "writing outside the sandbox", cell: func(w *world) string {
		return fmt.Sprintf(`import os
for path in ["/usr/grpo-probe", "/etc/grpo-probe", "/grpo-probe", "/dev/grpo-probe", "/proc/grpo-probe", %q]:
    try:
        open(path, "w").write("x")
        print("WROTE", path)
    except OSError as e:
        print("refused", path, e.errno)
open("/tmp/grpo-probe-%d", "w").write("inside")
print("tmp ok")
`, filepath.Join(w.hostDir, "escaped"), os.Getpid())
	}, check: func(w *world, r Result, _ time.Duration) error {
		if strings.Contains(r.Stdout, "WROTE") || !strings.Contains(r.Stdout, "tmp ok") {
			return fmt.Errorf("writes: %q %q", r.Stdout, r.Error)
		}
		for _, p := range []string{filepath.Join(w.hostDir, "escaped"), fmt.Sprintf("/tmp/grpo-probe-%d", os.Getpid())} {
			if _, err := os.Stat(p); err == nil {
				return fmt.Errorf("%s appeared on the host", p)
			}
		}
		return nil
	}},
	{name: "reading secrets", cell: func(w *world) string {
		return fmt.Sprintf(`import os
print("ENV", dict(os.environ))
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            print(pid, open("/proc/%%s/environ" %% pid, "rb").read())
        except OSError as e:
            print(pid, "refused", e.errno)
for p in %s:
    print("EXISTS" if os.path.exists(p) else "absent", p)
print("home", os.path.expanduser("~"), os.listdir(os.path.expanduser("~")))
`, pyList(w.hostPaths))
	}, check: func(w *world, r Result, _ time.Duration) error {
		all := r.Stdout + r.Stderr + r.Error
		switch {
		case strings.Contains(all, w.secret):
			return errors.New("the parent's secret is visible inside")
		case strings.Contains(all, "EXISTS"):
			return fmt.Errorf("host paths visible inside: %q", r.Stdout)
		case !strings.Contains(r.Stdout, "home /tmp"):
			return fmt.Errorf("want HOME=/tmp, got %q %q", r.Stdout, r.Error)
		}
		return nil
	}},
	{name: "opening a socket", cell: func(w *world) string {
		return fmt.Sprintf(`import socket
print("interfaces", socket.if_nameindex())
try:
    socket.create_connection(("127.0.0.1", %d), timeout=0.5).close()
    print("CONNECTED")
except OSError as e:
    print("tcp refused:", e)
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("1.1.1.1", 53))
    print("SENT")
except OSError as e:
    print("udp refused:", e)
`, w.port())
	}, check: func(w *world, r Result, _ time.Duration) error {
		if strings.Contains(r.Stdout, "CONNECTED") || strings.Contains(r.Stdout, "SENT") || w.accepted() {
			return fmt.Errorf("the network is reachable: %q", r.Stdout)
		}
		return want(strings.Contains(r.Stdout, "interfaces [(1, 'lo')]"), "want loopback only, got %q %q", r.Stdout, r.Error)
	}},
	{name: "setsid and double-fork children", cell: func(*world) string {
		return fmt.Sprintf(`import os, subprocess
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.execve("/bin/sleep", ["sleep", %[1]q], {})  # no environment, so no owner mark
    os._exit(0)
os.waitpid(pid, 0)
subprocess.Popen(["/bin/sleep", %[1]q], start_new_session=True)
print("left behind")
`, leftoverNonce)
	}, check: func(_ *world, r Result, _ time.Duration) error {
		return want(strings.Contains(r.Stdout, "left behind"), "got %q %q", r.Stdout, r.Error)
	}},
	{name: "sleeping children holding stdout", cell: func(*world) string {
		return fmt.Sprintf("import subprocess\nsubprocess.Popen(['/bin/sh', '-c', 'sleep %s'])\nprint('returned')\n", leftoverNonce)
	}, check: func(_ *world, r Result, elapsed time.Duration) error {
		return want(r.Stdout == "returned\n" && !r.TimedOut && elapsed < 500*time.Millisecond, "want an answer at once, got %+v after %v", r, elapsed)
	}},
	{name: "killing the parent", cell: func(*world) string {
		return guardPidNS + "os.kill(os.getppid(), 9)\nos.kill(1, 9)\ntry:\n    os.kill(-1, 9)\nexcept ProcessLookupError:\n    pass  # nothing else in the namespace to kill\nprint('parent still there:', os.getppid())\n"
	}, check: func(_ *world, r Result, _ time.Duration) error {
		return want(strings.Contains(r.Stdout, "parent still there: 1"), "got %q %q", r.Stdout, r.Error)
	}},
	{name: "kill -9 -1", kills: true, cell: func(*world) string {
		return guardPidNS + "import subprocess\nsubprocess.run(['/bin/sh', '-c', 'kill -9 -1'])\nprint('unreachable')\n"
	}, check: func(_ *world, r Result, _ time.Duration) error {
		return want(strings.Contains(r.Error, "interpreter killed (SIGKILL)"), "want the interpreter's death reported, got %q", r.Error)
	}},
	{name: "1 GB print", cell: func(*world) string {
		return "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n"
	}, check: func(_ *world, r Result, _ time.Duration) error {
		return want(r.Truncated && len(r.Stdout) == 4096 && strings.Contains(r.Error, "File too large"),
			"want 4096 bytes kept and EFBIG at RLIMIT_FSIZE, got %d bytes, truncated=%v, %q", len(r.Stdout), r.Truncated, r.Error)
	}},
	{name: "1 GB from a child", cell: func(*world) string {
		return "import subprocess, sys\nprint(subprocess.run(['/usr/bin/head', '-c', '1073741824', '/dev/zero']).returncode, file=sys.stderr)\n"
	}, check: func(_ *world, r Result, _ time.Duration) error {
		// head dies of SIGXFSZ at RLIMIT_FSIZE: returncode -25.
		return want(r.Truncated && len(r.Stdout) == 4096 && r.Stderr == "-25\n" && r.Error == "", "got %d bytes, %q, %q", len(r.Stdout), r.Stderr, r.Error)
	}},
	{name: "binary output", cell: func(*world) string {
		return "import sys\nsys.stdout.buffer.write(bytes(range(256)) * 4)\n"
	}, check: func(_ *world, r Result, _ time.Duration) error {
		return want(utf8.ValidString(r.Stdout) && strings.Contains(r.Stdout, "ABC") && strings.Contains(r.Stdout, "\uFFFD") && r.Error == "",
			"got %q %q", r.Stdout, r.Error)
	}},
	{name: "invalid UTF-8", cell: func(*world) string {
		return "import os\nos.write(1, b'caf\\xc3\\xa9 \\xff\\xfe \\xed\\xa0\\x80 \\xc3')\nprint('\\udcff')\n"
	}, check: func(_ *world, r Result, _ time.Duration) error {
		return want(utf8.ValidString(r.Stdout) && strings.HasPrefix(r.Stdout, "café \uFFFD") && strings.Contains(r.Stdout, `\udcff`),
			"got %q %q", r.Stdout, r.Error)
	}},
	{name: "garbage on the control channel", kills: true, cell: func(*world) string {
		return "import os\nfor fd in map(int, os.listdir('/proc/self/fd')):\n    if fd > 2:\n        try:\n            os.write(fd, b'garbage')\n        except OSError:\n            pass\n"
	}, check: func(_ *world, r Result, _ time.Duration) error {
		return want(strings.Contains(r.Error, "control channel"), "got %q", r.Error)
	}},
	{name: "closing every fd", kills: true, cell: func(*world) string { return "import os\nos.closerange(0, 1 << 16)\n" },
		check: func(_ *world, r Result, _ time.Duration) error {
			return want(strings.Contains(r.Error, "the interpreter exited"), "got %q", r.Error)
		}},
	{name: "a fork that returns to the server", cell: func(*world) string { return "import os\nos.fork()\nx = 1\n" },
		check: func(_ *world, r Result, _ time.Duration) error { return want(r.Error == "", "got %q", r.Error) }},
	{name: "limits", cell: func(*world) string {
		return "import resource as r\nprint([r.getrlimit(getattr(r, 'RLIMIT_' + n)) for n in ('CPU', 'AS', 'FSIZE', 'NOFILE', 'NPROC', 'CORE')])\n"
	}, check: func(_ *world, r Result, _ time.Duration) error {
		// Soft and hard: the CPU hard limit is a second past the soft one.
		const limits = "[(2, 3), (268435456, 268435456), (8388608, 8388608), (256, 256), (16, 16), (0, 0)]\n"
		return want(r.Stdout == limits, "want rlimits %q, got %q %q", limits, r.Stdout, r.Error)
	}},
	{name: "sys.exit", cell: func(*world) string { return "import sys\nsys.exit(3)\n" },
		check: func(_ *world, r Result, _ time.Duration) error {
			return want(strings.Contains(r.Error, "SystemExit: 3"), "got %q", r.Error)
		}},
}

func pyList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// runHostile runs one case in a fresh episode and returns nil when it was
// contained: the check passes, the episode's next call works (with its state
// when the interpreter survived, restarted when the cell killed it), and
// after the episode nothing the cell started is left.
func runHostile(cfg Config, w *world, c hostileCase) error {
	ctx := context.Background()
	if c.timeout != 0 {
		cfg.Timeout = c.timeout
	}
	pool, err := NewPool(cfg, 1)
	if err != nil {
		return err
	}
	defer pool.Close()
	it, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	if r, err := it.Run(ctx, "state = 'kept'"); err != nil || r.Error != "" {
		pool.Release(it)
		return fmt.Errorf("setup cell: %v %q", err, r.Error)
	}
	start := time.Now()
	r, err := it.Run(ctx, c.cell(w))
	elapsed := time.Since(start)
	if err != nil {
		pool.Release(it)
		return fmt.Errorf("Run: %v", err)
	}
	var problems []string
	if err := c.check(w, r, elapsed); err != nil {
		problems = append(problems, err.Error())
	}
	next, err := it.Run(ctx, "print(2 + 2, globals().get('state'))")
	wantNext := "4 kept\n"
	if c.kills {
		wantNext = "4 None\n"
	}
	if err != nil || next.Stdout != wantNext || next.Restarted != c.kills {
		problems = append(problems, fmt.Sprintf("next call: want %q (restarted=%v), got %+v, %v", wantNext, c.kills, next, err))
	}
	// Release alone must end everything of the episode: its namespace
	// empties and no child with the nonce remains, while the pool's next
	// interpreter warms up. Then, with the pool closed, nothing at all.
	ns := replNS(it)
	pool.Release(it)
	if l := waitGone(ns); len(l) > 0 {
		problems = append(problems, "left behind by Release: "+strings.Join(l, "; "))
	}
	pool.Close()
	if l := waitNoLeftovers(); len(l) > 0 {
		problems = append(problems, "left behind: "+strings.Join(l, "; "))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func TestHostileCells(t *testing.T) {
	cfg := hostileConfig()
	requireSandbox(t, cfg)
	w := newWorld(t)
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			if err := runHostile(cfg, w, c); err != nil {
				t.Error(err)
			}
		})
	}
}

// Busy threads left running after their cell has returned: the episode goes
// on until RLIMIT_CPU, which counts every thread, kills the interpreter, and
// the call after that gets a fresh one.
func TestHostileBusyThreads(t *testing.T) {
	cfg := hostileConfig()
	requireSandbox(t, cfg)
	pool, err := NewPool(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	it, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Release(it)
	r, err := it.Run(ctx, "import threading\ndef spin():\n    while True:\n        pass\nfor _ in range(4):\n    threading.Thread(target=spin, daemon=True).start()\nprint('spinning')\n")
	if err != nil || r.Stdout != "spinning\n" {
		t.Fatalf("%+v %v", r, err)
	}
	var died, reason string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r, err := it.Run(ctx, "print(2 + 2)")
		if err != nil {
			t.Fatal(err)
		}
		if r.Error != "" {
			died = r.Error
			continue
		}
		if r.Stdout != "4\n" {
			t.Fatalf("%+v", r)
		}
		if r.Restarted {
			reason = r.RestartReason
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The death shows either in the call it interrupted or, when it came
	// between calls, as the next call's restart reason.
	if !strings.Contains(died+reason, "CPU time limit of 2s exceeded") && !strings.Contains(died+reason, "timeout") {
		t.Fatalf("want the interpreter stopped by RLIMIT_CPU (or the timeout), got %q / restart reason %q", died, reason)
	}
	t.Logf("stopped with: %q; restart reason %q", died, reason)
}

// kill -9 -1 must not reach a host process of the sandbox's own user.
func TestHostileKillAllSparesHost(t *testing.T) {
	cfg := hostileConfig()
	requireSandbox(t, cfg)
	sentinel := exec.Command("/bin/sleep", "60")
	if os.Geteuid() == 0 {
		sentinel.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	}
	if err := sentinel.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sentinel.Process.Kill(); sentinel.Wait() }()
	res, err := RunCommand(context.Background(), cfg, []string{"/bin/sh", "-c", "kill -9 -1; echo alive"}, nil)
	if err != nil || res.Stdout != "alive\n" {
		t.Fatalf("%+v %v", res, err)
	}
	if err := sentinel.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("kill -9 -1 in the sandbox reached the host: %v", err)
	}
}

func TestHostileCommands(t *testing.T) {
	cfg := hostileConfig()
	requireSandbox(t, cfg)
	w := newWorld(t)
	cases := []struct {
		name  string
		argv  []string
		stdin string
		check func(r CommandResult, elapsed time.Duration) error
	}{
		{"fork bomb", []string{"/bin/sh", "-c", "f() { f | f & }; f; sleep 0.3; echo done"}, "", func(r CommandResult, _ time.Duration) error {
			return want(!r.TimedOut, "%+v", r)
		}},
		{"infinite loop", []string{"/bin/sh", "-c", "while :; do :; done"}, "", func(r CommandResult, e time.Duration) error {
			return want(r.TimedOut && r.ExitCode == -1 && strings.Contains(r.Error, "longer than 2s") && e < 5*time.Second, "%+v after %v", r, e)
		}},
		{"sleeping child holding stdout", []string{"/bin/sh", "-c", "sleep " + leftoverNonce + " & echo started"}, "", func(r CommandResult, e time.Duration) error {
			return want(r.Stdout == "started\n" && r.ExitCode == 0 && e < 500*time.Millisecond, "%+v after %v", r, e)
		}},
		{"1 GB of output", []string{"/usr/bin/head", "-c", "1073741824", "/dev/zero"}, "", func(r CommandResult, e time.Duration) error {
			return want(r.Truncated && len(r.Stdout) == 4096 && strings.Contains(r.Error, "more than 4096 bytes"), "%d bytes, %q", len(r.Stdout), r.Error)
		}},
		{"environment", []string{"/usr/bin/env"}, "", func(r CommandResult, _ time.Duration) error {
			return want(!strings.Contains(r.Stdout, w.secret) && strings.Contains(r.Stdout, "HOME=/tmp\n"), "%q", r.Stdout)
		}},
		{"binary output", []string{"/usr/bin/head", "-c", "2048", "/dev/urandom"}, "", func(r CommandResult, _ time.Duration) error {
			return want(utf8.ValidString(r.Stdout) && r.ExitCode == 0, "%+v", r)
		}},
		{"stdin", []string{"/bin/cat"}, "hello\xff", func(r CommandResult, _ time.Duration) error {
			return want(r.Stdout == "hello\uFFFD" && r.ExitCode == 0, "%+v", r)
		}},
		{"exit status", []string{"/bin/sh", "-c", "echo oops >&2; exit 3"}, "", func(r CommandResult, _ time.Duration) error {
			return want(r.ExitCode == 3 && r.Stderr == "oops\n" && r.Error == "", "%+v", r)
		}},
		{"killed by a signal", []string{"/bin/sh", "-c", "kill -9 $$"}, "", func(r CommandResult, _ time.Duration) error {
			return want(r.ExitCode == 137 && strings.Contains(r.Error, "SIGKILL"), "%+v", r)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			r, err := RunCommand(context.Background(), cfg, c.argv, []byte(c.stdin))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.check(r, time.Since(start)); err != nil {
				t.Error(err)
			}
			if l := waitNoLeftovers(); len(l) > 0 {
				t.Errorf("left behind: %s", strings.Join(l, "; "))
			}
		})
	}
}
