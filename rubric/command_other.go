//go:build !unix

package rubric

import "os/exec"

// Without sessions or process groups, exec.CommandContext's default kill
// of the direct child is all that can be done.
func startIsolated(newCmd func() *exec.Cmd) (*exec.Cmd, error) {
	cmd := newCmd()
	return cmd, cmd.Start()
}

func killTree(*exec.Cmd, string) {}
