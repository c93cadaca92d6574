package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// bwrap's --die-with-parent (and Pdeathsig in unsafe mode) fires when the
// parent *thread* exits, not the process. Go may end an OS thread (a locked
// goroutine that returns), so every sandbox is started from one goroutine
// locked to a thread that never exits.
var (
	spawnOnce sync.Once
	spawnCh   = make(chan func())
)

func startLocked(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		go func() {
			runtime.LockOSThread()
			for f := range spawnCh {
				f()
			}
		}()
	})
	done := make(chan error, 1)
	spawnCh <- func() { done <- cmd.Start() }
	return <-done
}

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
		cmd = exec.Command(l.bwrap, l.bwrapArgs(argv)...)
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

// killGroup ends a started sandbox: SIGKILL to bwrap (whose death takes the
// pid namespace with it) and to its process group (unsafe mode's children).
func killGroup(p *os.Process) {
	syscall.Kill(-p.Pid, syscall.SIGKILL)
	p.Kill()
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
