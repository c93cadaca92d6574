//go:build unix

package rubric

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCommandTimeoutKillsProcessGroup: a helper the program started in the
// background must not outlive the timeout.
func TestCommandTimeoutKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	f, err := Command(CommandConfig{
		Argv:    []string{script(t, `sleep 30 & echo $! > "$PIDFILE"; wait`)},
		Env:     []string{"PIDFILE=" + pidFile},
		Timeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f(t.Context(), Rollout{}); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("error %v; want a timeout", err)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	// The orphan is reaped by init shortly after the kill; until then it
	// may linger as a zombie, so poll.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			return
		}
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(stat), ") Z ") {
			syscall.Kill(pid, syscall.SIGKILL) // nothing to do; it is dead
			return
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("background child %d survived the timeout", pid)
}
