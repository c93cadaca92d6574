//go:build unix

package rubric

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCommandTimeoutKillsProcessGroup: a helper the program started in the
// background must not outlive the timeout. The helper is found by the
// tests' marker in its environment: in the program's pid namespace, $!
// is not a pid this process could check.
func TestCommandTimeoutKillsProcessGroup(t *testing.T) {
	f, err := Command(CommandConfig{
		Argv:    []string{script(t, `sleep 30 & wait`)},
		Timeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f(t.Context(), Rollout{}); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("error %v; want a timeout", err)
	}
	// The orphan is reaped by init shortly after the kill; leftoverProcesses
	// polls and skips zombies.
	if left := leftoverProcesses(os.Getenv(testMarkerKey), 2*time.Second); len(left) > 0 {
		t.Errorf("background child survived the timeout: %v", left)
	}
}

// TestCommandReplyKeptWhenChildHoldsStdout: the program prints its reward
// and exits while a background child still holds stdout. The reply used
// to be lost ("WaitDelay expired", scored 0); it is kept, at once, and the
// child is killed.
func TestCommandReplyKeptWhenChildHoldsStdout(t *testing.T) {
	f, err := Command(CommandConfig{Argv: []string{script(t, `cat >/dev/null; sleep 30 & echo 0.5`)}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s, err := f(t.Context(), Rollout{})
	if err != nil || s.Value != 0.5 {
		t.Fatalf("score %v, error %v; want 0.5", s.Value, err)
	}
	if took := time.Since(start); took > 400*time.Millisecond {
		t.Errorf("took %v; the reply should not wait for the child", took)
	}
	if left := leftoverProcesses(os.Getenv(testMarkerKey), 2*time.Second); len(left) > 0 {
		t.Errorf("still running after the run: %v", left)
	}
}

// TestCommandSetsidChildDies: a child that leaves the process group with
// setsid outlived the run (13 strays after one run); the program's pid
// namespace, or the fallback's scan for its run marker, ends it too.
func TestCommandSetsidChildDies(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program")
	}
	for _, body := range []string{
		`cat >/dev/null; setsid sleep 30 & setsid -f sleep 31 >/dev/null 2>&1; echo 1`,
		`cat >/dev/null; setsid sh -c 'sleep 32 & sleep 33' & sleep 30`, // and a timeout
	} {
		f, err := Command(CommandConfig{Argv: []string{script(t, body)}, Timeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		s, err := f(t.Context(), Rollout{})
		if strings.Contains(body, "echo 1") && (err != nil || s.Value != 1) {
			t.Fatalf("score %v, error %v; want 1", s.Value, err)
		}
		if left := leftoverProcesses(os.Getenv(testMarkerKey), 2*time.Second); len(left) > 0 {
			t.Errorf("%s: still running after the run: %v", body, left)
		}
	}
}
