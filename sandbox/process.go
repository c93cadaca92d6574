package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/grpo-dev/grpo/internal/spawn"
)

// testHookStarted, set only by this package's tests, learns the pid of each
// interpreter's bwrap once it is up, to find its pid namespace later.
var testHookStarted func(pid int)

// startLocked starts a sandbox from the thread that never exits: bwrap's
// --die-with-parent (and Pdeathsig in unsafe mode) fire when the parent
// *thread* exits.
func startLocked(cmd *exec.Cmd) error { return spawn.Start(cmd) }

// prepare sets what every sandbox command shares: a minimal environment for
// bwrap itself, a cwd the sandbox user can enter, the sandbox user when grpo
// runs as root, and its own process group so a kill reaches unsafe mode's
// children too.
func (l launcher) prepare(cmd *exec.Cmd) {
	cmd.Env = []string{ownerMark}
	if m := l.cfg.mutate; m != nil && m.inheritEnv {
		cmd.Env = append(os.Environ(), ownerMark)
	}
	cmd.Dir = "/"
	attr := &syscall.SysProcAttr{Setpgid: true}
	if l.unsafe {
		attr.Pdeathsig = syscall.SIGKILL
	}
	if os.Geteuid() == 0 {
		attr.Credential = &syscall.Credential{Uid: uint32(l.cfg.UID), Gid: uint32(l.cfg.GID), Groups: []uint32{}}
	}
	cmd.SysProcAttr = attr
}

// command builds the exec.Cmd running argv in a sandbox. cleanup releases
// what the command needed (a cgroup, unsafe mode's work dir) after it exits.
func (l launcher) command(argv []string) (cmd *exec.Cmd, cleanup func(), err error) {
	var cleanups []func()
	cleanup = func() {
		for _, f := range cleanups {
			f()
		}
	}
	if l.unsafe {
		dir, err := os.MkdirTemp("", "grpo-sandbox-*")
		if err != nil {
			return nil, nil, err
		}
		cleanups = append(cleanups, func() { os.RemoveAll(dir) })
		if os.Geteuid() == 0 {
			os.Chown(dir, l.cfg.UID, l.cfg.GID)
		}
		full := l.rlimitArgs(argv)
		cmd = exec.Command(full[0], full[1:]...)
		l.prepare(cmd)
		cmd.Env = append(l.innerEnv(dir), "PYTHONNOUSERSITE=1")
		cmd.Dir = dir
	} else {
		// --info-fd: bwrap tells us the pid of its child, the sandbox's pid 1
		// (see sandboxProc.kill).
		cmd = exec.Command(l.bwrap, append([]string{"--info-fd", "3"}, l.bwrapArgs(argv)...)...)
		l.prepare(cmd)
	}
	if l.cgroup != nil {
		g, err := l.cgroup.create(l.cfg)
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		cleanups = append(cleanups, g.remove)
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(g.fd.Fd())
	}
	return cmd, cleanup, nil
}

// sandboxProc is one started sandbox.
type sandboxProc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it has exited and been cleaned up

	unsafe bool
	mu     sync.Mutex
	pidfd  int  // the sandbox's pid 1, -1 until known (never in unsafe mode)
	exited bool // the program has exited; its pid is not reaped yet or is gone
	once   sync.Once
}

// start starts cmd (built by command) and reaps it in the background.
func (l launcher) start(cmd *exec.Cmd, cleanup func()) (*sandboxProc, error) {
	sp := &sandboxProc{cmd: cmd, done: make(chan struct{}), pidfd: -1, unsafe: l.unsafe}
	var info *os.File
	if !l.unsafe {
		r, w, err := os.Pipe()
		if err != nil {
			cleanup()
			return nil, err
		}
		info = r
		cmd.ExtraFiles = []*os.File{w}
	}
	err := startLocked(cmd)
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	if err != nil {
		if info != nil {
			info.Close()
		}
		cleanup()
		return nil, fmt.Errorf("sandbox: start: %v", err)
	}
	if info != nil {
		go sp.readInfo(info)
	}
	go func() {
		sp.exitedNotReaped()
		cmd.Wait()
		cleanup()
		sp.mu.Lock()
		if sp.pidfd >= 0 {
			syscall.Close(sp.pidfd)
			sp.pidfd = -2
		}
		sp.mu.Unlock()
		close(sp.done)
	}()
	return sp, nil
}

// exitedNotReaped waits until the program has exited but leaves it
// unreaped, so that its pid and process group cannot be recycled yet: the
// one moment a group kill is safe. In unsafe mode, that kill ends the
// children it left (the pid namespace does that in bwrap mode).
func (sp *sandboxProc) exitedNotReaped() {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, 1 /* P_PID */, uintptr(sp.cmd.Process.Pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|0x01000000 /* WNOWAIT */, 0, 0)
		if errno != syscall.EINTR {
			break
		}
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.unsafe {
		syscall.Kill(-sp.cmd.Process.Pid, syscall.SIGKILL)
	}
	sp.exited = true
}

// readInfo learns the sandbox's pid 1 from bwrap's --info-fd JSON and holds
// it as a pidfd, so a later kill cannot hit a recycled pid.
func (sp *sandboxProc) readInfo(f *os.File) {
	defer f.Close()
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if json.NewDecoder(io.LimitReader(f, 4<<10)).Decode(&info) != nil || info.ChildPid <= 0 {
		return
	}
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(info.ChildPid), 0, 0)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if errno != 0 || sp.pidfd == -2 { // gone already, or bwrap has exited
		if errno == 0 {
			syscall.Close(int(fd))
		}
		return
	}
	sp.pidfd = int(fd)
}

// Linux syscall numbers, the same on every architecture since 5.3.
const (
	sysPidfdSendSignal = 424
	sysPidfdOpen       = 434
)

// kill ends the sandbox. SIGKILL to its pid 1 takes the whole pid namespace
// down and leaves bwrap to reap it and exit, so no zombie is orphaned to
// the host's init; killing bwrap first would (its reaper dies of
// --die-with-parent with no parent left to reap it). Where pid 1 is not
// known yet, or bwrap lingers, bwrap itself and its process group (unsafe
// mode's children) get SIGKILL.
func (sp *sandboxProc) kill() {
	sp.once.Do(func() {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		if sp.exited {
			return
		}
		if sp.pidfd >= 0 {
			_, _, errno := syscall.Syscall6(sysPidfdSendSignal, uintptr(sp.pidfd), uintptr(syscall.SIGKILL), 0, 0, 0, 0)
			if errno == 0 {
				go func() {
					select {
					case <-sp.done:
					case <-time.After(2 * time.Second):
						sp.killBwrap()
					}
				}()
				return
			}
		}
		sp.killBwrapLocked()
	})
}

func (sp *sandboxProc) killBwrap() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.killBwrapLocked()
}

// killBwrapLocked kills bwrap (or unsafe mode's program) and its process
// group, while the pid is known not to be reaped (sp.mu held, !exited).
func (sp *sandboxProc) killBwrapLocked() {
	if sp.exited {
		return
	}
	syscall.Kill(-sp.cmd.Process.Pid, syscall.SIGKILL)
	sp.cmd.Process.Kill()
}

// exitText says how a sandboxed program ended, in words for the model.
// bwrap reports a program killed by signal N as exit status 128+N.
func exitText(st *os.ProcessState, cpu time.Duration) string {
	if st == nil {
		return "did not start"
	}
	sig := syscall.Signal(0)
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig = ws.Signal()
	} else if c := st.ExitCode(); c > 128 && c < 128+65 {
		sig = syscall.Signal(c - 128)
	}
	switch sig {
	case 0:
		return fmt.Sprintf("exited with status %d", st.ExitCode())
	case syscall.SIGXCPU:
		return fmt.Sprintf("killed: CPU time limit of %v exceeded", cpu)
	case syscall.SIGKILL:
		return "killed (SIGKILL): a memory or CPU limit, or the code itself"
	default:
		return "killed by signal " + sig.String()
	}
}

// capBuffer keeps the first max bytes written to it and counts the rest.
type capBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	max   int
	total int64
	over  func() // called once when the cap is first exceeded
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	before := b.total
	b.total += int64(len(p))
	if before <= int64(b.max) && b.total > int64(b.max) && b.over != nil {
		b.over()
	}
	return len(p), nil
}

func (b *capBuffer) bytes() ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes()), b.total > int64(b.max)
}
