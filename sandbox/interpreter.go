package sandbox

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// replSource is the REPL server, passed to python3 -c so that nothing needs
// to be written to disk or bound into the sandbox.
//
//go:embed repl.py
var replSource string

// Result is what one cell produced. Text fields are valid UTF-8: invalid
// bytes (binary output) become U+FFFD.
type Result struct {
	Stdout, Stderr string // what the cell wrote to fds 1 and 2, children included, each at most MaxOutput bytes
	Value          string // repr of the cell's trailing expression, "" when it has none or it is None
	Error          string // the traceback, or why the cell was stopped; "" when it ran to completion
	TimedOut       bool   // the cell ran past Config.Timeout and its interpreter was killed
	Truncated      bool   // Stdout or Stderr was cut to MaxOutput
	Restarted      bool   // a fresh interpreter ran this cell: the episode's earlier one died, with its variables
	RestartReason  string // when Restarted, how the earlier one ended
	Count          int    // the cell's number within its interpreter (1 for the first)
}

// Text renders the result for the model as verifiers' PythonEnv does
// (stdout, "stderr:" and its text, the traceback or "Out[n]: value", or
// "(no output)"), led by a note when the interpreter was restarted.
func (r Result) Text() string {
	var parts []string
	if r.Restarted {
		parts = append(parts, "[note: the Python interpreter was restarted ("+r.RestartReason+"); variables from earlier calls are gone]")
	}
	if s := strings.TrimRight(r.Stdout, " \t\r\n"); s != "" {
		parts = append(parts, s)
	}
	if s := strings.TrimRight(r.Stderr, " \t\r\n"); s != "" {
		parts = append(parts, "stderr:\n"+s)
	}
	if r.Truncated {
		parts = append(parts, "[output truncated]")
	}
	if s := strings.TrimRight(r.Error, " \t\r\n"); s != "" {
		parts = append(parts, s)
	} else if r.Value != "" {
		parts = append(parts, fmt.Sprintf("Out[%d]: %s", r.Count, r.Value))
	}
	if len(parts) == 0 || (len(parts) == 1 && r.Restarted) {
		parts = append(parts, "(no output)")
	}
	return strings.Join(parts, "\n")
}

// repl is one running REPL server in one sandbox.
type repl struct {
	*sandboxProc
	cfg      Config
	req      *os.File // cells go here (the server's fd 0)
	resFile  *os.File // replies come from here (the server's fd 1)
	res      *bufio.Reader
	stderr   *capBuffer // bwrap's and python's own complaints
	closeReq sync.Once
	why      string // set when a call stopped the interpreter: how it ended
}

// ended says how a dead interpreter ended, for the next call's Result.
func (r *repl) ended() string {
	if r.why != "" {
		return r.why
	}
	select {
	case <-r.done:
	case <-time.After(time.Second):
	}
	return "the previous one " + exitText(r.cmd.ProcessState, r.cfg.CPUTime)
}

// startREPL starts a sandboxed REPL server and waits until it is ready.
func startREPL(l launcher) (*repl, error) {
	c := l.cfg
	argv := append([]string{c.Python, "-I", "-B", "-c", replSource, strconv.Itoa(c.MaxOutput)}, c.Preload...)
	cmd, cleanup, err := l.command(argv)
	if err != nil {
		return nil, err
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		cleanup()
		return nil, err
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		cleanup()
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	r := &repl{cfg: c, req: reqW, resFile: resR, res: bufio.NewReaderSize(resR, 64<<10), stderr: &capBuffer{max: 4 << 10}}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = reqR, resW, r.stderr
	// The sandbox's death closes every copy of its pipes at once (the pid
	// namespace goes with it); WaitDelay only guards against a bug there.
	cmd.WaitDelay = time.Second
	sp, err := l.start(cmd, cleanup)
	reqR.Close()
	resW.Close()
	if err != nil {
		reqW.Close()
		resR.Close()
		return nil, err
	}
	r.sandboxProc = sp
	resR.SetReadDeadline(time.Now().Add(c.StartTimeout))
	f, err := readFrame(r.res, r.maxFrame())
	if err == nil && f[tagReady] == nil {
		err = fmt.Errorf("%w: no ready field", errFrame)
	}
	if err == nil && f[tagError] != nil {
		err = fmt.Errorf("preloading %v failed: %s", c.Preload, f[tagError])
	}
	if err != nil {
		r.kill()
		<-r.done
		why, _ := r.stderr.bytes()
		return nil, fmt.Errorf("sandbox: interpreter did not start: %v; %s %s", err, exitText(cmd.ProcessState, c.CPUTime), strings.TrimSpace(string(why)))
	}
	if testHookStarted != nil {
		testHookStarted(cmd.Process.Pid)
	}
	return r, nil
}

// maxFrame bounds a reply: stdout, stderr, value and error at MaxOutput each.
func (r *repl) maxFrame() int { return 4*r.cfg.MaxOutput + 1024 }

func (r *repl) kill() {
	r.sandboxProc.kill()
	r.closeReq.Do(func() { r.req.Close() })
}

func (r *repl) dead() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// errStopped marks a cell after which the interpreter is gone.
var errStopped = errors.New("interpreter stopped")

// run sends one cell and waits for its reply. A non-nil error means the
// interpreter is gone; the Result then says why, for the model.
func (r *repl) run(ctx context.Context, code string) (Result, error) {
	code = strings.ToValidUTF8(code, "\uFFFD")
	if len(code) > 1<<20 {
		return Result{Error: fmt.Sprintf("ValueError: the code is %d bytes; the limit is 1 MiB", len(code))}, nil
	}
	deadline := time.Now().Add(r.cfg.Timeout)
	r.req.SetWriteDeadline(deadline)
	if _, err := r.req.Write(appendFrame(nil, field{tagCode, []byte(code)})); err != nil {
		return r.stopped(ctx, err)
	}
	r.resFile.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { r.resFile.SetReadDeadline(time.Now()) })
	f, err := readFrame(r.res, r.maxFrame())
	stop()
	if err != nil {
		return r.stopped(ctx, err)
	}
	var res Result
	res.Stdout = text(f[tagStdout], strings.Contains(string(f[tagTruncated]), "o"))
	res.Stderr = text(f[tagStderr], strings.Contains(string(f[tagTruncated]), "e"))
	res.Value = text(f[tagValue], false)
	res.Error = text(f[tagError], false)
	res.Truncated = len(f[tagTruncated]) > 0
	res.Count, _ = strconv.Atoi(string(f[tagCount]))
	return res, nil
}

// stopped kills the interpreter after a failed exchange and explains it.
func (r *repl) stopped(ctx context.Context, err error) (Result, error) {
	r.kill()
	if ctx.Err() != nil {
		r.why = "the previous call was cancelled"
		return Result{}, ctx.Err()
	}
	const lost = "; the next call starts a fresh interpreter, so variables from earlier calls are gone"
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		r.why = fmt.Sprintf("the previous cell ran past the %v timeout", r.cfg.Timeout)
		return Result{TimedOut: true, Error: fmt.Sprintf("TimeoutError: the cell ran longer than %v and was stopped%s", r.cfg.Timeout, lost)}, errStopped
	case errors.Is(err, errFrame):
		r.why = "the previous cell wrote to the control channel"
		return Result{Error: "RuntimeError: the cell wrote garbage to the interpreter's control channel and the interpreter was stopped" + lost}, errStopped
	}
	// EOF or a broken pipe: the process died. Its status says how.
	select {
	case <-r.done:
	case <-time.After(time.Second):
	}
	how := exitText(r.cmd.ProcessState, r.cfg.CPUTime)
	r.why = "the previous one " + how
	return Result{Error: "RuntimeError: the interpreter " + how + lost}, errStopped
}

// text makes sandbox bytes safe to hand on: valid UTF-8, and when the bytes
// were cut at the cap, no half rune at the end.
func text(b []byte, cut bool) string {
	if cut {
		for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
			if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
