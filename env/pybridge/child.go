package pybridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/grpo-dev/grpo/internal/spawn"
)

// maxLine bounds one response line; a rows page of long prompts stays far
// below it, and a longer line is drained and fails its request rather
// than being buffered.
const maxLine = 64 << 20

// maxLogLine is how much of one stderr line is logged; the rest is drained.
const maxLogLine = 64 << 10

// drainGrace is how long the pipes are read after the child exits (and its
// group is killed): what it wrote before dying is kept, and a process that
// left the group but holds a pipe cannot delay the death past it.
const drainGrace = 2 * time.Second

// lifelineEnv tells bridge.py which fd is the lifeline: the read end of a
// pipe whose only write end grpo holds. Its watchdog process (in the
// child's group) kills the group when the pipe reaches EOF, which the
// kernel ensures when grpo dies in any way, SIGKILL included.
const lifelineEnv = "GRPO_BRIDGE_LIFELINE"

// child is one running python process and its in-flight requests.
type child struct {
	cmd      *exec.Cmd
	pgid     int
	stdin    io.WriteCloser
	lifeline *os.File
	log      func(string)

	wmu sync.Mutex // one writer per line

	mu         sync.Mutex
	nextID     int64
	pending    map[int64]chan response
	lastStderr string
	killReason string

	dead  chan struct{} // closed once the process is gone
	death *DeathError   // why; set before dead is closed
}

// DeathError says why a python child is gone: the exit, and the last line
// it wrote to stderr, which is usually the exception that killed it.
type DeathError struct {
	Reason     string
	LastStderr string
}

func (e *DeathError) Error() string {
	if e.LastStderr == "" {
		return e.Reason
	}
	return e.Reason + "; its last stderr line: " + e.LastStderr
}

// startChild runs the bridge script in python, in a process group of its
// own (so that it and everything it starts are killed together, and a
// Ctrl-C at the terminal reaches grpo only) with SIGKILL as its parent-death
// signal, under the limits lim. Nothing is sent yet.
func startChild(python string, lim limits, log func(string)) (*child, error) {
	var files []*os.File // the child's ends, closed here once it has them
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	pipe := func() (r, w *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil
		}
		return r, w
	}
	inR, inW := pipe()
	outR, outW := pipe()
	errR, errW := pipe()
	lifeR, lifeW := pipe()
	files = append(files, inR, outW, errW, lifeR)
	if inR == nil || outR == nil || errR == nil || lifeR == nil {
		for _, f := range []*os.File{inW, outR, errR, lifeW} {
			if f != nil {
				f.Close()
			}
		}
		return nil, errors.New("cannot make pipes for the python child (too many open files?)")
	}
	cmd := exec.Command(python, "-c", script)
	// *os.File ends are handed over as they are: Wait then copies nothing
	// and closes nothing of ours, so it returns when the child exits.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.ExtraFiles = []*os.File{lifeR}
	cmd.Env = append(os.Environ(), lifelineEnv+"=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := spawn.Start(cmd); err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		lifeW.Close()
		return nil, fmt.Errorf("starting %s: %v", python, err)
	}
	c := &child{cmd: cmd, pgid: cmd.Process.Pid, stdin: inW, lifeline: lifeW, log: log,
		pending: map[int64]chan response{}, dead: make(chan struct{})}
	// The limits are set before the first request, so no code of the
	// environment runs without them.
	if err := lim.apply(c.pgid); err != nil {
		c.log("(grpo) " + err.Error())
	}
	stdoutDone, stderrDone := make(chan struct{}), make(chan struct{})
	go c.readStderr(errR, stderrDone)
	go c.readStdout(outR, stdoutDone)
	go c.wait(outR, errR, stdoutDone, stderrDone)
	return c, nil
}

// readLines calls fn with each line of r (without its newline), however
// long: a line is passed whole up to max bytes, and a longer one as its
// first max bytes with the length of the whole. Nothing stops the reading
// but the end of r, so the child never blocks on a full pipe.
func readLines(r io.Reader, max int, fn func(line []byte, n int)) {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	n := 0
	for {
		frag, err := br.ReadSlice('\n')
		n += len(frag)
		if room := max - len(buf); room > 0 {
			buf = append(buf, frag[:min(len(frag), room)]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(buf) > 0 || n > 0 {
			line := buf
			if len(line) > 0 && line[len(line)-1] == '\n' {
				line, n = line[:len(line)-1], n-1
			} else if err == nil {
				n-- // the newline fell beyond max
			}
			fn(line, n)
		}
		buf, n = buf[:0], 0
		if cap(buf) > 1<<20 {
			buf = nil // one huge line does not pin its buffer
		}
		if err != nil {
			return
		}
	}
}

func (c *child) readStderr(r io.Reader, done chan<- struct{}) {
	defer close(done)
	readLines(r, maxLogLine, func(b []byte, n int) {
		line := strings.TrimRight(string(b), "\r")
		if n > len(b) {
			line += fmt.Sprintf("… (a %d-byte line, cut)", n)
		}
		if strings.TrimSpace(line) != "" {
			c.mu.Lock()
			c.lastStderr = strings.TrimSpace(line)
			c.mu.Unlock()
		}
		c.log(line)
	})
}

// readStdout dispatches responses to their callers until the stream ends.
func (c *child) readStdout(r io.Reader, done chan<- struct{}) {
	defer close(done)
	readLines(r, maxLine, func(line []byte, n int) {
		if n > len(line) {
			c.oversized(line, n)
			return
		}
		resp, err := decodeResponse(line)
		if err != nil {
			c.log(fmt.Sprintf("(grpo) ignored a line on the protocol stream: %v: %.200s", err, line))
			return
		}
		c.deliver(*resp.ID, resp)
	})
}

// oversized fails the request a response over maxLine answered; its id is
// the line's first field, as bridge.py writes it.
func (c *child) oversized(line []byte, n int) {
	var id int64
	if _, err := fmt.Sscanf(string(line[:min(len(line), 64)]), `{"id": %d`, &id); err != nil {
		c.log(fmt.Sprintf("(grpo) dropped a %d-byte line on the protocol stream (over %d MiB)", n, maxLine>>20))
		return
	}
	msg := fmt.Sprintf("the environment's response is %d bytes, over grpo's %d MiB bound for one response", n, maxLine>>20)
	c.deliver(id, response{OK: false, Kind: "env", Error: msg})
}

func (c *child) deliver(id int64, resp response) {
	c.mu.Lock()
	ch := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ch != nil {
		ch <- resp
	}
}

// wait reaps the child, kills what it left in its group, lets the readers
// drain what it wrote, then fails whatever is still in flight. The death
// is the child's exit, not the end of its pipes, which a grandchild may
// hold open.
func (c *child) wait(outR, errR *os.File, stdoutDone, stderrDone <-chan struct{}) {
	waitErr := c.cmd.Wait()
	syscall.Kill(-c.pgid, syscall.SIGKILL)
	c.lifeline.Close()
	grace := time.NewTimer(drainGrace)
	for _, done := range []<-chan struct{}{stdoutDone, stderrDone} {
		select {
		case <-done:
		case <-grace.C:
			outR.Close() // wakes the readers
			errR.Close()
			<-done
		}
	}
	grace.Stop()
	outR.Close()
	errR.Close()
	c.stdin.Close()
	c.mu.Lock()
	reason := c.killReason
	if reason == "" {
		reason = "the python child exited"
		if waitErr != nil {
			reason += " (" + waitErr.Error() + ")"
		}
	}
	c.death = &DeathError{Reason: reason, LastStderr: c.lastStderr}
	c.pending = nil
	c.mu.Unlock()
	close(c.dead)
}

// kill stops the process and its group; reason becomes its DeathError's.
func (c *child) kill(reason string) {
	c.mu.Lock()
	if c.killReason == "" {
		c.killReason = reason
	}
	c.mu.Unlock()
	if c.alive() {
		syscall.Kill(-c.pgid, syscall.SIGKILL)
	}
}

func (c *child) alive() bool {
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

// call sends req and waits for its response, the child's death or ctx.
func (c *child) call(ctx context.Context, req request) (json.RawMessage, error) {
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.pending == nil {
		c.mu.Unlock()
		<-c.dead
		return nil, c.death
	}
	c.nextID++
	req.ID = c.nextID
	c.pending[req.ID] = ch
	c.mu.Unlock()
	line, err := json.Marshal(req)
	if err != nil {
		c.forget(req.ID)
		return nil, fmt.Errorf("encoding the %s request: %v", req.Op, err)
	}
	c.wmu.Lock()
	_, err = c.stdin.Write(append(line, '\n'))
	c.wmu.Unlock()
	if err != nil {
		// A broken pipe: the process is gone or going; say why it went.
		<-c.dead
		return nil, c.death
	}
	select {
	case r := <-ch:
		return result(r)
	case <-c.dead:
		select {
		case r := <-ch: // answered just before it died
			return result(r)
		default:
			return nil, c.death
		}
	case <-ctx.Done():
		c.forget(req.ID)
		return nil, ctx.Err()
	}
}

func result(r response) (json.RawMessage, error) {
	if !r.OK {
		return nil, &ChildError{Kind: r.Kind, Msg: r.Error, Missing: r.Missing}
	}
	return r.Result, nil
}

func (c *child) forget(id int64) {
	c.mu.Lock()
	if c.pending != nil {
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

// errIsDeath reports whether err is a child's death.
func errIsDeath(err error) bool {
	var d *DeathError
	return errors.As(err, &d)
}
