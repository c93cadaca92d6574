package rubric

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"
)

// CommandConfig describes an external reward program: it gets the rollout as
// one JSON object on stdin and prints its reward on stdout (see wire.go for
// both formats). One process runs per rollout.
type CommandConfig struct {
	// Argv is the program and its arguments; no shell is involved.
	Argv []string
	// Timeout bounds one run (default 30 s). On expiry everything the
	// program started is killed with it (see isolate).
	Timeout time.Duration
	// MaxOutput caps stdout in bytes (default 1 MiB).
	MaxOutput int64
	// Dir is the working directory ("" = the trainer's).
	Dir string
	// Env adds "KEY=value" entries to the trainer's environment.
	Env []string
}

const (
	defaultTimeout   = 30 * time.Second
	defaultMaxOutput = 1 << 20
	stderrKeep       = 2048
)

// Command returns a reward function that runs cfg's program. A program that
// crashes, exits non-zero, hangs past the timeout, prints too much or prints
// something that is not a reward makes the Func return an error naming the
// cause, which the Rubric scores as 0 and counts.
func Command(cfg CommandConfig) (Func, error) {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return nil, errors.New(`rubric: command rubric has no argv; give e.g. ["python3", "reward.py"]`)
	}
	path, err := exec.LookPath(cfg.Argv[0])
	if err != nil {
		return nil, fmt.Errorf("rubric: command %q not found: %v; give a path or a program on PATH", cfg.Argv[0], err)
	}
	if cfg.Timeout < 0 || cfg.MaxOutput < 0 {
		return nil, fmt.Errorf("rubric: command %q has negative timeout %v or max output %d", cfg.Argv[0], cfg.Timeout, cfg.MaxOutput)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.MaxOutput == 0 {
		cfg.MaxOutput = defaultMaxOutput
	}
	for _, kv := range cfg.Env {
		if !strings.Contains(kv, "=") {
			return nil, fmt.Errorf("rubric: command env entry %q is not KEY=value", kv)
		}
	}
	argv := append([]string{path}, cfg.Argv[1:]...)
	name := cfg.Argv[0]
	return func(ctx context.Context, r Rollout) (Score, error) {
		payload, err := encodeRollout(r)
		if err != nil {
			return Score{}, err
		}
		ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
		run, err := runProgram(ctx, argv, cfg, payload)
		if err != nil {
			return Score{}, fmt.Errorf("command %s could not start: %v", name, err)
		}
		stdout, stderr, runErr := run.stdout, run.stderr, run.err
		switch {
		case ctx.Err() == context.DeadlineExceeded:
			return Score{}, fmt.Errorf("command %s timed out after %v (killed with everything it started)", name, cfg.Timeout)
		case ctx.Err() != nil:
			return Score{}, fmt.Errorf("command %s cancelled: %v", name, ctx.Err())
		case stdout.overflow:
			return Score{}, fmt.Errorf("command %s printed more than %d bytes; print only the reward", name, cfg.MaxOutput)
		case runErr != nil:
			msg := fmt.Sprintf("command %s failed: %v", name, runErr)
			if tail := lastLine(stderr.String()); tail != "" {
				msg += "; stderr: " + tail
			}
			return Score{}, errors.New(msg)
		}
		s, err := parseReply(stdout.Bytes())
		if err != nil {
			return Score{}, fmt.Errorf("command %s: %v", name, err)
		}
		return s, nil
	}, nil
}

// runMarkerKey is set in each run's environment, with a value unique to
// the run: where no pid namespace can be had, it is how the processes the
// run left behind are found (see killTree).
const runMarkerKey = "GRPO_RUBRIC_RUN"

var runCounter atomic.Uint64

type programRun struct {
	stdout, stderr *cappedBuffer
	err            error // the program's exit
}

// runProgram runs the program with payload on stdin until it exits, then
// kills everything it started and keeps what it printed.
//
// The pipes are ours, handed to the program as plain files, so Wait returns
// when the program exits, not when the last holder of its stdout does: a
// background child that inherited stdout no longer turns a printed reward
// into "WaitDelay expired".
func runProgram(ctx context.Context, argv []string, cfg CommandConfig, payload []byte) (programRun, error) {
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return programRun{}, err
	}
	outR, outW, err := pipe()
	if err != nil {
		return programRun{}, err
	}
	errR, errW, err := pipe()
	if err != nil {
		return programRun{}, err
	}
	marker := fmt.Sprintf("%d-%d", os.Getpid(), runCounter.Add(1))
	cmd, err := startIsolated(func() *exec.Cmd {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = cfg.Dir
		cmd.Env = append(append(os.Environ(), cfg.Env...), runMarkerKey+"="+marker)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
		return cmd
	})
	// The program holds its ends now; ours would keep the pipes open.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		return programRun{}, err
	}
	go func() {
		inW.Write(payload) // a program that does not read stdin gets what fits
		inW.Close()
	}()
	run := programRun{stdout: &cappedBuffer{max: cfg.MaxOutput}, stderr: &cappedBuffer{max: stderrKeep, truncate: true}}
	outDone, errDone := drain(outR, run.stdout), drain(errR, run.stderr)
	run.err = cmd.Wait()
	killTree(cmd, marker)
	// Everything the program started is dead, so the pipes reach EOF; if
	// something escaped anyway, stop waiting for it after a moment.
	deadline := time.Now().Add(200 * time.Millisecond)
	outR.SetReadDeadline(deadline)
	errR.SetReadDeadline(deadline)
	inW.SetWriteDeadline(deadline)
	<-outDone
	<-errDone
	return run, nil
}

// drain copies f into dst until EOF, dst's cap or f's deadline. It closes
// f at once when dst is full, so the program gets EPIPE instead of
// blocking on a pipe nobody reads.
func drain(f *os.File, dst *cappedBuffer) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(dst, f)
		f.Close()
	}()
	return done
}

// cappedBuffer keeps at most max bytes. Past the cap it either fails the
// write (stdout: the copy stops and the program gets EPIPE) or, with
// truncate, silently drops the rest (stderr: only for the error message).
//
// The bytes.Buffer is a field, not embedded, so that io.Copy cannot bypass
// Write through the buffer's ReadFrom method.
type cappedBuffer struct {
	buf      bytes.Buffer
	max      int64
	truncate bool
	overflow bool
}

var errOutputCap = errors.New("output cap reached")

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := c.max - int64(c.buf.Len())
	if int64(len(p)) > room {
		c.overflow = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		if c.truncate {
			return len(p), nil
		}
		return 0, errOutputCap
	}
	return c.buf.Write(p)
}

func (c *cappedBuffer) Bytes() []byte  { return c.buf.Bytes() }
func (c *cappedBuffer) String() string { return c.buf.String() }

// lastLine returns the last non-empty line of s, trimmed to one short line
// (a Python traceback ends with the exception, the useful part).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return oneLine(lines[len(lines)-1])
}
