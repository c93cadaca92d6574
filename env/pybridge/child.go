package pybridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// maxLine bounds one response line; a rows page of long prompts stays far
// below it, and a child that sends more is stopped rather than buffered.
const maxLine = 64 << 20

// child is one running python process and its in-flight requests.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   func(string)

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

// startChild runs the bridge script in python. Nothing is sent yet.
func startChild(python string, log func(string)) (*child, error) {
	cmd := exec.Command(python, "-c", script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %v", python, err)
	}
	c := &child{cmd: cmd, stdin: stdin, log: log, pending: map[int64]chan response{}, dead: make(chan struct{})}
	stderrDone := make(chan struct{})
	go c.readStderr(stderr, stderrDone)
	go c.readStdout(stdout, stderrDone)
	return c, nil
}

func (c *child) readStderr(r io.Reader, done chan<- struct{}) {
	defer close(done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) != "" {
			c.mu.Lock()
			c.lastStderr = strings.TrimSpace(line)
			c.mu.Unlock()
		}
		c.log(line)
	}
}

// readStdout dispatches responses to their callers until the stream ends,
// then reaps the process and fails whatever is still in flight.
func (c *child) readStdout(r io.Reader, stderrDone <-chan struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		resp, err := decodeResponse(sc.Bytes())
		if err != nil {
			c.log(fmt.Sprintf("(grpo) ignored a line on the protocol stream: %v: %.200s", err, sc.Text()))
			continue
		}
		c.mu.Lock()
		ch := c.pending[*resp.ID]
		delete(c.pending, *resp.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- resp
		}
	}
	if err := sc.Err(); err != nil {
		c.kill(fmt.Sprintf("it sent an unreadable response (%v)", err))
	}
	<-stderrDone
	waitErr := c.cmd.Wait()
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

// kill stops the process; reason becomes its DeathError's.
func (c *child) kill(reason string) {
	c.mu.Lock()
	if c.killReason == "" {
		c.killReason = reason
	}
	c.mu.Unlock()
	c.cmd.Process.Kill()
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
		return nil, &ChildError{Kind: r.Kind, Msg: r.Error}
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
