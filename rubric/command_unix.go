//go:build unix

package rubric

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel starts the program in its own process group and makes a
// cancelled context kill that whole group, not only the direct child: a
// shell script's `sleep` or a Python multiprocessing worker would otherwise
// outlive the timeout and hold the output pipe open.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// reapGroup kills what is left of the program's process group after it
// exited, so stray background helpers do not accumulate over a long run.
func reapGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
