package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func newTestPool(t testing.TB, cfg Config, size int) *Pool {
	t.Helper()
	requireSandbox(t, cfg)
	p, err := NewPool(cfg, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func acquire(t testing.TB, p *Pool) *Interpreter {
	t.Helper()
	it, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Release(it) })
	return it
}

func run(t testing.TB, it *Interpreter, code string) Result {
	t.Helper()
	r, err := it.Run(context.Background(), code)
	if err != nil {
		t.Fatalf("Run(%q): %v", code, err)
	}
	return r
}

// Warm calls: results, state across calls, the notebook value, errors —
// the checks the benchmark's timing relies on, without timing.
func TestWarmCalls(t *testing.T) {
	it := acquire(t, newTestPool(t, hostileConfig(), 1))
	steps := []struct {
		code string
		want Result
	}{
		{"print(1+1)", Result{Stdout: "2\n", Count: 1}},
		{"x = 41", Result{Count: 2}},
		{"x + 1", Result{Value: "42", Count: 3}},
		{"def f(n):\n    return n * x\nf(2)", Result{Value: "82", Count: 4}},
		{"None", Result{Count: 5}},
		{"import sys\nprint('to stderr', file=sys.stderr)\n'done'", Result{Stderr: "to stderr\n", Value: "'done'", Count: 6}},
		{"print(1+1)", Result{Stdout: "2\n", Count: 7}},
	}
	for _, s := range steps {
		if got := run(t, it, s.code); got != s.want {
			t.Errorf("%q:\n got %+v\nwant %+v", s.code, got, s.want)
		}
	}
	r := run(t, it, "f(")
	if !strings.Contains(r.Error, "SyntaxError") || r.Count != 8 {
		t.Errorf("syntax error: %+v", r)
	}
	r = run(t, it, "def g():\n    return 1 / 0\ng()")
	if !strings.Contains(r.Error, `File "<cell-9>", line 2, in g`) || !strings.Contains(r.Error, "return 1 / 0") || !strings.HasSuffix(r.Error, "ZeroDivisionError: division by zero\n") {
		t.Errorf("traceback should show the cell's own lines: %q", r.Error)
	}
	if strings.Contains(r.Error, "run_cell") {
		t.Errorf("traceback shows the server's frames: %q", r.Error)
	}
	if r := run(t, it, "print('caf\xff')"); r.Stdout != "caf\uFFFD\n" {
		t.Errorf("invalid UTF-8 in code: %+v", r)
	}
}

// The math-python env promises Debian's numpy, sympy and scipy.
func TestDebianPackages(t *testing.T) {
	// The hostile suite's 2 s limits are about runaway cells; a cold
	// import of sympy and scipy took longer than that on this 2-core
	// machine under go test ./...'s parallel load, and the test is about
	// the packages being there.
	cfg := hostileConfig()
	cfg.Timeout, cfg.CPUTime = 20*time.Second, 20*time.Second
	it := acquire(t, newTestPool(t, cfg, 1))
	r := run(t, it, "import numpy, sympy, scipy.integrate\nx = sympy.Symbol('x')\nprint(sympy.integrate(x**2, (x, 0, 3)), numpy.arange(4).sum(), round(scipy.integrate.quad(lambda t: t, 0, 1)[0], 3))")
	if r.Stdout != "9 6 0.5\n" {
		t.Fatalf("want numpy, sympy and scipy from Debian (scripts/install-deps.sh installs them): %+v", r)
	}
}

func TestText(t *testing.T) {
	cases := []struct {
		r    Result
		want string
	}{
		{Result{}, "(no output)"},
		{Result{Stdout: "2\n"}, "2"},
		{Result{Value: "42", Count: 3}, "Out[3]: 42"},
		{Result{Stdout: "a\n", Stderr: "w\n", Error: "Traceback\nE\n", Value: "ignored"}, "a\nstderr:\nw\nTraceback\nE"},
		{Result{Stdout: "xx", Truncated: true}, "xx\n[output truncated]"},
		{Result{Restarted: true, RestartReason: "the previous cell ran past the 2s timeout"},
			"[note: the Python interpreter was restarted (the previous cell ran past the 2s timeout); variables from earlier calls are gone]\n(no output)"},
	}
	for _, c := range cases {
		if got := c.r.Text(); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.r, got, c.want)
		}
	}
}

// Episodes never share an interpreter: what one defines, the next lacks.
func TestEpisodesDoNotShareState(t *testing.T) {
	p := newTestPool(t, hostileConfig(), 2)
	a, b := acquire(t, p), acquire(t, p)
	run(t, a, "secret = 'a'")
	if r := run(t, b, "globals().get('secret')"); r.Value != "" {
		t.Errorf("a concurrent episode sees another's state: %+v", r)
	}
	p.Release(a)
	c := acquire(t, p)
	if r := run(t, c, "globals().get('secret')"); r.Value != "" {
		t.Errorf("a released interpreter was reused: %+v", r)
	}
	if _, err := a.Run(context.Background(), "1"); err == nil {
		t.Error("Run after Release succeeded")
	}
}

// Release from another goroutine stops a running cell at once, and a
// cancelled context does too, leaving the episode a fresh interpreter.
func TestStopRunningCell(t *testing.T) {
	p := newTestPool(t, hostileConfig(), 1)
	it := acquire(t, p)
	go func() { time.Sleep(200 * time.Millisecond); p.Release(it) }()
	start := time.Now()
	if _, err := it.Run(context.Background(), "while True: pass"); !errors.Is(err, errReleased) {
		t.Errorf("Run during Release: %v", err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("Release took %v to stop the cell", d)
	}

	it = acquire(t, p)
	run(t, it, "x = 1")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := it.Run(ctx, "while True: pass"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run with an expiring context: %v", err)
	}
	if r := run(t, it, "print(globals().get('x'))"); r.Stdout != "None\n" || !r.Restarted {
		t.Errorf("after a cancelled cell: %+v", r)
	}
}

func TestPreload(t *testing.T) {
	cfg := hostileConfig()
	cfg.Preload = []string{"sympy"}
	it := acquire(t, newTestPool(t, cfg, 1))
	if r := run(t, it, "import sys\n'sympy' in sys.modules, 'sympy' in globals()"); r.Value != "(True, False)" {
		t.Errorf("preloaded modules are imported, not bound: %+v", r)
	}
	cfg.Preload = []string{"no_such_module"}
	p, err := NewPool(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Acquire(context.Background()); err == nil || !strings.Contains(err.Error(), "ModuleNotFoundError") {
		t.Errorf("a failing preload: %v", err)
	}
}

func TestPoolClosed(t *testing.T) {
	p := newTestPool(t, hostileConfig(), 1)
	p.Close()
	if _, err := p.Acquire(context.Background()); !errors.Is(err, errClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Python: "/nonexistent/python3"}, "install Debian's python3"},
		{Config{Python: "/bin/sh", ReadOnly: []string{"relative"}}, "not absolute"},
		{Config{CPUTime: time.Millisecond}, "granularity"},
		{Config{Preload: []string{"os; import x"}}, "not a module name"},
		{Config{Bwrap: "/nonexistent/bwrap"}, "apt-get install bubblewrap"},
	} {
		_, err := NewPool(c.cfg, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
}
