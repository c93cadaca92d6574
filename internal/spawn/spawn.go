// Package spawn starts child processes whose parent-death signal must
// mean the death of this process.
package spawn

import (
	"os/exec"
	"runtime"
	"sync"
)

// Pdeathsig (and bwrap's --die-with-parent) fires when the parent *thread*
// exits, not the process. Go may end an OS thread (a locked goroutine that
// returns), so children are started from one goroutine locked to a thread
// that never exits.
var (
	once sync.Once
	ch   = make(chan func())
)

// Start is cmd.Start on the thread that lives as long as the process.
func Start(cmd *exec.Cmd) error {
	once.Do(func() {
		go func() {
			runtime.LockOSThread()
			for f := range ch {
				f()
			}
		}()
	})
	done := make(chan error, 1)
	ch <- func() { done <- cmd.Start() }
	return <-done
}
