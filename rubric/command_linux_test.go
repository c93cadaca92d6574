//go:build linux

package rubric

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// leftoverProcesses lists the live processes (other than this one) whose
// environment carries marker, polling up to wait for killed ones to go.
func leftoverProcesses(marker string, wait time.Duration) []string {
	needle := []byte(testMarkerKey + "=" + marker + "\x00")
	deadline := time.Now().Add(wait)
	for {
		var left []string
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			pid, _ := strconv.Atoi(filepath.Base(d))
			if pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile(d + "/environ") // empty for a zombie
			if err != nil || !bytes.Contains(env, needle) {
				continue
			}
			cmdline, _ := os.ReadFile(d + "/cmdline")
			left = append(left, strconv.Itoa(pid)+" "+strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCommandWithoutNamespaces runs the stray-process tests as on systems
// that refuse some ways to a pid namespace: one that allows only a user
// namespace (unprivileged), and one that refuses both (a container
// without CAP_SYS_ADMIN and with user namespaces off), where the session
// kill and the marker scan alone must catch the setsid child.
func TestCommandWithoutNamespaces(t *testing.T) {
	saved := make([]bool, len(nsWays))
	for i, w := range nsWays {
		saved[i] = w.refused.Load()
	}
	t.Cleanup(func() {
		for i, w := range nsWays {
			w.refused.Store(saved[i])
		}
	})
	for refuse, name := range map[int]string{1: "user namespace only", len(nsWays): "no namespace"} {
		t.Run(name, func(t *testing.T) {
			for i, w := range nsWays {
				w.refused.Store(i < refuse)
			}
			t.Run("namespace used", TestCommandNamespaceUsed)
			t.Run("reply kept", TestCommandReplyKeptWhenChildHoldsStdout)
			t.Run("setsid child", TestCommandSetsidChildDies)
			t.Run("timeout", TestCommandTimeoutKillsProcessGroup)
		})
	}
}

// TestCommandNamespaceUsed: where startIsolated reports a pid namespace,
// the program really is its init (pid 1), and without one it is not.
func TestCommandNamespaceUsed(t *testing.T) {
	var out bytes.Buffer
	cmd, err := startIsolated(func() *exec.Cmd {
		cmd := exec.CommandContext(t.Context(), "/bin/sh", "-c", "echo $$")
		cmd.Stdout = &out
		return cmd
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	ns := inNamespace(cmd)
	if pid1 := strings.TrimSpace(out.String()) == "1"; pid1 != ns {
		t.Fatalf("program's pid %q, but inNamespace = %v", strings.TrimSpace(out.String()), ns)
	}
	t.Logf("pid namespace: %v (clone flags %#x)", ns, cmd.SysProcAttr.Cloneflags)
}
