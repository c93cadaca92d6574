package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// CommandResult is what one sandboxed command produced.
type CommandResult struct {
	Stdout, Stderr string // valid UTF-8, each at most MaxOutput bytes
	ExitCode       int    // the command's status; -1 when it was stopped or killed
	Error          string // why the command was stopped or how it died; "" when it exited by itself
	TimedOut       bool   // it ran past Config.Timeout
	Truncated      bool   // it wrote more than MaxOutput to a stream and was stopped
}

// RunCommand runs argv once in a fresh sandbox with cfg's limits, stdin as
// its input, /tmp as its work dir; a custom tool's files are made visible
// with cfg.ReadOnly. Output past MaxOutput stops the command: a tool's
// reply is bounded, and reading on would only spend CPU. The error is
// non-nil only when the command could not be run at all (no sandbox here,
// bad config, ctx ended).
func RunCommand(ctx context.Context, cfg Config, argv []string, stdin []byte) (CommandResult, error) {
	if len(argv) == 0 {
		return CommandResult{}, errors.New("sandbox: RunCommand: empty argv")
	}
	l, err := newLauncher(cfg)
	if err != nil {
		return CommandResult{}, err
	}
	if err := l.check(); err != nil {
		return CommandResult{}, err
	}
	c := l.cfg
	cmd, cleanup, err := l.command(argv)
	if err != nil {
		return CommandResult{}, err
	}

	var (
		mu      sync.Mutex
		why     string
		stopped = make(chan struct{})
		once    sync.Once
	)
	stop := func(reason string) {
		once.Do(func() {
			mu.Lock()
			why = reason
			mu.Unlock()
			close(stopped)
		})
	}
	stdout := &capBuffer{max: c.MaxOutput, over: func() { stop("output") }}
	stderr := &capBuffer{max: c.MaxOutput, over: func() { stop("output") }}
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	sp, err := l.start(cmd, cleanup)
	if err != nil {
		return CommandResult{}, err
	}
	timer := time.NewTimer(c.Timeout)
	defer timer.Stop()
	select {
	case <-sp.done:
	case <-timer.C:
		stop("timeout")
	case <-ctx.Done():
		stop("ctx")
	case <-stopped:
	}
	sp.kill()
	<-sp.done

	out, outCut := stdout.bytes()
	errb, errCut := stderr.bytes()
	res := CommandResult{Stdout: text(out, outCut), Stderr: text(errb, errCut), ExitCode: cmd.ProcessState.ExitCode()}
	mu.Lock()
	defer mu.Unlock()
	switch why {
	case "ctx":
		return CommandResult{}, ctx.Err()
	case "timeout":
		res.ExitCode, res.TimedOut = -1, true
		res.Error = fmt.Sprintf("the command ran longer than %v and was stopped", c.Timeout)
	case "output":
		res.ExitCode, res.Truncated = -1, true
		res.Error = fmt.Sprintf("the command wrote more than %d bytes to one stream and was stopped", c.MaxOutput)
	default:
		// bwrap reports death by signal N as 128+N, like a shell.
		if res.ExitCode > 128 || res.ExitCode < 0 {
			res.Error = "the command " + exitText(cmd.ProcessState, c.CPUTime)
		}
	}
	return res, nil
}
