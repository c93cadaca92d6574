//go:build !unix

package rubric

import "os/exec"

// Without process groups, exec.CommandContext's default kill of the direct
// child is all that can be done.
func killGroupOnCancel(cmd *exec.Cmd) {}

func reapGroup(cmd *exec.Cmd) {}
