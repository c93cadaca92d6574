package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
)

// agentProgram is one run of an environment's agent program: a child
// process of this one (the user's own configured program, not
// model-written code, so it runs outside the sandbox) in a process group
// of its own, killed whole at its deadline or when its episode ends. The
// timeout bounds the time to its first call and, apart, its episode from
// the moment a cache slot takes it.
type agentProgram struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	ctx    context.Context // ends at the deadline, or when the program exits
	spec   env.AgentSpec
	// deadline fires timeout after the start and again after admission
	// (hold and restart); expired says that it did.
	deadline *time.Timer
	timeout  time.Duration
	expired  atomic.Bool
	exited   chan struct{} // closed when the program has exited
	err      error         // why it exited, once exited is closed
	out      capped        // its standard output: the answer the rubric reads
	errOut   capped        // the tail of its standard error, for messages
}

// agentTimeout is an episode's deadline when the environment sets none.
const agentTimeout = 10 * time.Minute

// startAgent starts spec's program for ex with OPENAI_BASE_URL at base.
// The program reads the task from its standard input as JSON
// ({"id": …, "prompt": [messages]}) or from GRPO_PROMPT (the last user
// message), and calls the model at OPENAI_BASE_URL.
func startAgent(ctx context.Context, spec env.AgentSpec, ex env.Example, base string) (*agentProgram, error) {
	if len(spec.Command) == 0 {
		return nil, errors.New("the agent program's command is empty; set [agent] command")
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = agentTimeout
	}
	a := &agentProgram{spec: spec, timeout: timeout, exited: make(chan struct{}), out: capped{max: 1 << 20}, errOut: capped{max: 4 << 10, tail: true}}
	a.ctx, a.cancel = context.WithCancel(ctx)
	a.deadline = time.AfterFunc(timeout, func() { a.expired.Store(true); a.cancel() })
	cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
	cmd.Dir = spec.Dir
	last := ""
	for _, m := range ex.Prompt {
		if m.Role == "user" {
			last = m.Content
		}
	}
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+base, "OPENAI_API_BASE="+base, "OPENAI_API_KEY=grpo-intercept",
		"OPENAI_MODEL="+interceptModel, "GRPO_EXAMPLE_ID="+ex.ID, "GRPO_PROMPT="+last)
	cmd.Env = append(cmd.Env, spec.Env...)
	task, _ := json.Marshal(struct {
		ID     string         `json:"id"`
		Prompt []chat.Message `json:"prompt"`
	}{ex.ID, ex.Prompt})
	cmd.Stdin = bytes.NewReader(append(task, '\n'))
	cmd.Stdout, cmd.Stderr = &a.out, &a.errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Output pipes held open by a grandchild must not keep Wait waiting.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		a.cancel()
		return nil, fmt.Errorf("starting the agent program %q: %v", spec.Command[0], err)
	}
	a.cmd = cmd
	go func() {
		<-a.ctx.Done()
		a.kill()
	}()
	go func() {
		a.err = cmd.Wait()
		a.deadline.Stop()
		close(a.exited)
		a.cancel()
	}()
	return a, nil
}

// hold stops the deadline while the program waits, its first call made,
// for a cache slot to take its episode: a step with more episodes than
// the cache holds at once must not time out the ones only queued.
func (a *agentProgram) hold() { a.deadline.Stop() }

// restart gives the admitted episode a whole timeout of its own.
func (a *agentProgram) restart() {
	if !a.expired.Load() {
		a.deadline.Reset(a.timeout)
	}
}

// kill ends the program's whole process group.
func (a *agentProgram) kill() {
	if a.cmd != nil && a.cmd.Process != nil {
		syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// stop kills the program if it still runs and waits for it.
func (a *agentProgram) stop() {
	a.cancel() // the deadline goroutine kills the group
	<-a.exited
}

// exitError says why the program failed, or nil when it exited with
// status 0.
func (a *agentProgram) exitError() error {
	switch {
	case a.err == nil:
		return nil
	case a.expired.Load():
		return fmt.Errorf("the agent program ran past its timeout; raise [agent] timeout or make it finish sooner%s", a.stderrTail())
	default:
		return fmt.Errorf("the agent program failed: %v%s", a.err, a.stderrTail())
	}
}

func (a *agentProgram) stderrTail() string {
	s := strings.TrimSpace(a.errOut.String())
	if s == "" {
		return ""
	}
	return " (stderr: " + strings.ReplaceAll(s, "\n", " | ") + ")"
}

// capped is a writer that keeps at most max bytes: the first ones, or
// with tail the last ones.
type capped struct {
	mu   sync.Mutex
	buf  []byte
	max  int
	tail bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = append(c.buf, p...)
	if len(c.buf) > c.max {
		if c.tail {
			c.buf = append(c.buf[:0], c.buf[len(c.buf)-c.max:]...)
		} else {
			c.buf = c.buf[:c.max]
		}
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf)
}
