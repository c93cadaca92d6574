//go:build unix

package rubric

import (
	"os/exec"
	"syscall"
)

// startIsolated starts the program in its own session, so that it and the
// helpers it forks form one process group that a single kill ends (a shell
// script's `sleep`, a Python multiprocessing worker), and on Linux in its
// own pid namespace where the system allows one, which also catches a
// helper that left the group with setsid. newCmd builds a fresh Cmd: one
// whose Start failed cannot be started again.
func startIsolated(newCmd func() *exec.Cmd) (*exec.Cmd, error) {
	for {
		cmd := newCmd()
		attr := &syscall.SysProcAttr{Setsid: true}
		ns := namespaceFor(attr)
		cmd.SysProcAttr = attr
		cmd.Cancel = func() error {
			// With Setsid the program's pid is its group's id.
			return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		err := cmd.Start()
		if err != nil && ns != nil && namespaceRefused(err) {
			ns.refuse() // and try the next way, down to none
			continue
		}
		return cmd, err
	}
}

// killTree kills what is left of the program's session after it exited, so
// stray helpers neither hold its output pipe nor pile up over a long run.
// In a pid namespace the kernel has already killed them all when the
// program (the namespace's init) exited.
func killTree(cmd *exec.Cmd, marker string) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if !inNamespace(cmd) {
		killMarked(marker)
	}
}
