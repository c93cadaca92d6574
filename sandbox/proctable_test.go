package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The process table is the suite's witness that nothing a sandbox started
// outlives it. Three marks find a leftover: the environment entry every
// sandbox process starts with (ownerMark), the pid namespace of every
// interpreter the tests started (which catches a child that exec'd with an
// empty environment), and a nonce the hostile cells put in the argv of the
// children they try to leave behind (which catches them even in a planted
// sandbox without a pid namespace).

var (
	nsMu      sync.Mutex
	sandboxNS = map[string]bool{} // "pid:[inode]" of every interpreter's namespace
	selfNS    string
)

func init() {
	selfNS, _ = os.Readlink("/proc/self/ns/pid")
	testHookStarted = func(bwrapPid int) {
		// The interpreter is up, so bwrap's child — pid 1 of the sandbox —
		// exists; its namespace is the sandbox's.
		if ns := childNS(bwrapPid); ns != "" {
			nsMu.Lock()
			sandboxNS[ns] = true
			nsMu.Unlock()
		}
	}
}

// leftoverNonce goes into the argv of every child a hostile cell tries to
// leave behind.
var leftoverNonce = "4242." + strconv.Itoa(os.Getpid())

func pids() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// stat returns a process's state letter and parent pid.
func stat(pid int) (state string, ppid int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", -1
	}
	// Fields after the command name, which may hold spaces and parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return "", -1
	}
	n, _ := strconv.Atoi(f[1])
	return f[0], n
}

func ppid(pid int) int {
	_, p := stat(pid)
	return p
}

// A zombie runs no code and holds no memory, only its pid, until its parent
// reaps it. bwrap leaves one behind on every exit: its monitor exits as soon
// as the sandbox's pid 1 reports the exit status, without reaping pid 1,
// which is then reparented to the host's init. A normal init reaps it at
// once; some container inits take seconds. Checks inside the suite skip
// zombies; the final check in TestMain waits for the host to reap them too.
func zombie(pid int) bool {
	s, _ := stat(pid)
	return s == "Z"
}

// leftovers lists the processes the tests' sandboxes left behind, zombies
// too when asked.
func leftovers(zombies bool) []string {
	var out []string
	nsMu.Lock()
	defer nsMu.Unlock()
	for _, pid := range pids() {
		if pid == os.Getpid() || (!zombies && zombie(pid)) {
			continue
		}
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
		var why string
		switch {
		case bytes.Contains(append([]byte{0}, env...), []byte("\x00"+ownerMark+"\x00")):
			why = "carries " + ownerMark
		case sandboxNS[ns]:
			why = "in sandbox pid namespace " + ns
		case bytes.Contains(cmdline, []byte(leftoverNonce)):
			why = "runs the hostile cells' leftover nonce"
		default:
			continue
		}
		out = append(out, fmt.Sprintf("pid %d (%s): %s", pid, bytes.ReplaceAll(bytes.TrimRight(cmdline, "\x00"), []byte{0}, []byte{' '}), why))
	}
	return out
}

// waitNoLeftovers gives the kernel a moment to kill and reap sandboxes,
// then returns what is still there (zombies only when asked).
func waitNoLeftovers() []string { return waitLeftovers(false, 3*time.Second) }

func waitLeftovers(zombies bool, wait time.Duration) []string {
	deadline := time.Now().Add(wait)
	for {
		l := leftovers(zombies)
		if len(l) == 0 || time.Now().After(deadline) {
			return l
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killLeftovers ends, by pid, processes a planted weak sandbox let escape.
func killLeftovers(t *testing.T) {
	for _, pid := range pids() {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.Contains(cmdline, []byte(leftoverNonce)) {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
				t.Logf("killed escaped pid %d", pid)
			}
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	// After every test: nothing any of them started may remain, not even a
	// zombie waiting for the host's init.
	if l := waitLeftovers(true, 20*time.Second); len(l) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: processes the sandbox tests started are still running:\n  %s\n", strings.Join(l, "\n  "))
		code = 1
	}
	os.Exit(code)
}

// requireSandbox skips where bubblewrap cannot create namespaces, saying
// why — unless GRPO_SANDBOX_REQUIRED is set (CI), where it fails.
func requireSandbox(t testing.TB, cfg Config) {
	t.Helper()
	if os.Getenv(modeEnv) == unsafeMode {
		t.Fatalf("%s=%s: the hostile-code suite needs the real sandbox", modeEnv, unsafeMode)
	}
	if err := Check(cfg); err != nil {
		if os.Getenv("GRPO_SANDBOX_REQUIRED") != "" {
			t.Fatalf("the hostile-code suite could not run (GRPO_SANDBOX_REQUIRED is set): %v", err)
		}
		t.Skipf("the hostile-code suite could not run: %v", err)
	}
}

// replNS is the pid namespace of an interpreter's current sandbox.
func replNS(it *Interpreter) string {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.r == nil {
		return ""
	}
	return childNS(it.r.cmd.Process.Pid)
}

// childNS is the pid namespace of bwrap's child, the sandbox's pid 1.
func childNS(bwrapPid int) string {
	for _, pid := range pids() {
		if ppid(pid) == bwrapPid {
			if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err == nil && ns != selfNS {
				return ns
			}
		}
	}
	return ""
}

// waitGone waits until no process is in namespace ns or runs the nonce, and
// lists those still there after a while.
func waitGone(ns string) []string {
	deadline := time.Now().Add(3 * time.Second)
	for {
		var out []string
		for _, pid := range pids() {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			pns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
			if !zombie(pid) && ((ns != "" && pns == ns) || bytes.Contains(cmdline, []byte(leftoverNonce))) {
				out = append(out, fmt.Sprintf("pid %d (%s)", pid, bytes.ReplaceAll(bytes.TrimRight(cmdline, "\x00"), []byte{0}, []byte{' '})))
			}
		}
		if len(out) == 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}
