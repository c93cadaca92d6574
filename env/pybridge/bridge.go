package pybridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/chat"
)

// ErrGaveUp is wrapped by every error of a Bridge whose child died
// Options.MaxCrashes times: the environment can serve no more episodes.
var ErrGaveUp = errors.New("the python environment is down")

// Target names the environment to load: verifiers'
// load_environment(Module, **Args), with ModuleDir put first on sys.path
// for an environment given as a path.
type Target struct {
	ID        string // grpo's id, for messages ("owner/name", "./envs/x.py")
	Module    string // what load_environment gets; "" means ID
	ModuleDir string
	Args      map[string]any
}

// Options tune a Bridge; the zero value is usable.
type Options struct {
	// Python is the interpreter; "" means FindPython().
	Python string
	// LoadTimeout bounds the handshake, in which the environment loads and
	// builds its datasets (which may download them); 0 means 10 minutes.
	LoadTimeout time.Duration
	// Timeout bounds every other request; 0 means 2 minutes.
	Timeout time.Duration
	// MaxCrashes is how many deaths of the child (crashes, and kills after
	// a timeout) the Bridge survives by starting a new one; 0 means 3.
	MaxCrashes int
	// MaxMemory bounds each process of the child in bytes (RLIMIT_DATA: its
	// heap and private writable mappings); 0 means half the machine's RAM,
	// at least 2 GiB.
	MaxMemory int64
	// MaxProcs is how many processes the child may add to its user's (an
	// RLIMIT_NPROC headroom, which root is exempt from); 0 means 1024.
	MaxProcs int
	// Log receives each line the child writes to stderr, prefixed with the
	// environment's id; nil writes them to os.Stderr.
	Log func(line string)
}

func (o *Options) fill() {
	if o.LoadTimeout <= 0 {
		o.LoadTimeout = 10 * time.Minute
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.MaxCrashes <= 0 {
		o.MaxCrashes = 3
	}
	if o.Log == nil {
		o.Log = func(line string) { fmt.Fprintln(os.Stderr, line) }
	}
}

// Bridge is one verifiers environment served by a python child. It is
// safe for concurrent use: all requests share one child, which handles
// them concurrently on one asyncio event loop — as verifiers itself runs
// an environment's rollouts — so an environment is loaded (and its
// datasets built) once, and an episode's State stays in the one process
// that all of the episode's requests reach. A child that dies is replaced
// on the next request; episodes it was playing fail.
type Bridge struct {
	target Target
	opts   Options
	python string
	hello  Hello

	mu      sync.Mutex
	c       *child
	crashes int
	down    error // set once the Bridge has given up
	closed  bool
}

// Start finds the python, starts the child and loads the environment. Its
// errors are one line naming the environment and what to install or fix.
func Start(ctx context.Context, t Target, opts Options) (*Bridge, error) {
	opts.fill()
	if t.Module == "" {
		t.Module = t.ID
	}
	python := opts.Python
	if python == "" {
		p, err := FindPython()
		if err != nil {
			return nil, fmt.Errorf("env %s: %v", t.ID, err)
		}
		python = p
	}
	b := &Bridge{target: t, opts: opts, python: python}
	c, err := b.startChild(ctx)
	if err != nil {
		return nil, err
	}
	b.c = c
	return b, nil
}

// Hello is the environment's metadata from the handshake.
func (b *Bridge) Hello() Hello { return b.hello }

// Python is the interpreter the child runs in.
func (b *Bridge) Python() string { return b.python }

// HarnessCommand is the agent program of a v1 taskset with an agent
// harness (Hello.Agent): this bridge's script in harness mode, which
// loads the environment as the child did and launches the harness for the
// task its standard input names, its model at OPENAI_BASE_URL.
func (b *Bridge) HarnessCommand() []string {
	req, _ := json.Marshal(request{Op: "hello", Protocol: Protocol, EnvID: b.target.ID, Module: b.target.Module,
		ModuleDir: b.target.ModuleDir, Args: b.target.Args})
	return []string{b.python, "-c", script, "harness", string(req)}
}

// startChild starts a child and does the handshake.
func (b *Bridge) startChild(ctx context.Context) (*child, error) {
	prefix := "env " + b.target.ID + ": "
	c, err := startChild(b.python, b.opts.limits(), func(line string) { b.opts.Log(prefix + line) })
	if err != nil {
		return nil, fmt.Errorf("env %s: %v", b.target.ID, err)
	}
	req := request{Op: "hello", Protocol: Protocol, EnvID: b.target.ID, Module: b.target.Module,
		ModuleDir: b.target.ModuleDir, Args: b.target.Args}
	var h Hello
	if err := b.send(ctx, c, req, b.opts.LoadTimeout, &h); err != nil {
		c.kill("the handshake failed")
		var ce *ChildError
		if errors.As(err, &ce) && ce.Kind == KindMissingVerifiers {
			return nil, fmt.Errorf("env %s: %s", b.target.ID, missingVerifiers(b.python))
		}
		if errors.As(err, &ce) && ce.Kind == KindMissingModule && ce.Missing != "" {
			return nil, fmt.Errorf("env %s: %s", b.target.ID, MissingModule(b.python, ce.Missing))
		}
		return nil, err
	}
	if h.Protocol != Protocol {
		c.kill("it speaks another protocol")
		return nil, fmt.Errorf("env %s: the bridge script speaks protocol %d, grpo %d; this is a bug in grpo", b.target.ID, h.Protocol, Protocol)
	}
	b.hello = h
	return c, nil
}

// live returns the running child, starting a new one in place of a dead
// one until MaxCrashes deaths, after which every call gets the same error.
func (b *Bridge) live(ctx context.Context) (*child, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return nil, fmt.Errorf("env %s: the bridge is closed", b.target.ID)
	case b.down != nil:
		return nil, b.down
	case b.c != nil && b.c.alive():
		return b.c, nil
	}
	var last error = errors.New("it failed to start")
	if b.c != nil {
		last = b.c.death
	}
	for {
		b.crashes++
		if b.crashes >= b.opts.MaxCrashes {
			b.down = fmt.Errorf("%w: env %s: its python child died %d times, the last time: %v",
				ErrGaveUp, b.target.ID, b.crashes, last)
			b.c = nil
			return nil, b.down
		}
		c, err := b.startChild(ctx)
		if err == nil {
			b.c = c
			return c, nil
		}
		last = err
	}
}

// call sends one request to the live child within the request timeout.
func (b *Bridge) call(ctx context.Context, req request, out any) error {
	c, err := b.live(ctx)
	if err != nil {
		return err
	}
	return b.send(ctx, c, req, b.opts.Timeout, out)
}

// send is one request to c under timeout. A request that outlives its
// timeout kills the child, since a stuck environment (a blocking call, an
// endless loop) would hold up every other episode on its event loop.
func (b *Bridge) send(ctx context.Context, c *child, req request, timeout time.Duration, out any) error {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := c.call(tctx, req)
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		c.kill(fmt.Sprintf("it was stopped after a %s request took longer than %v", req.Op, timeout))
		<-c.dead
		return fmt.Errorf("env %s: %s timed out after %v; the python child was stopped (%v)", b.target.ID, req.Op, timeout, c.death)
	case errIsDeath(err):
		return fmt.Errorf("env %s: %s failed: %w", b.target.ID, req.Op, err)
	default:
		return fmt.Errorf("env %s: %s: %w", b.target.ID, req.Op, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("env %s: %s: the child's result does not decode: %v", b.target.ID, req.Op, err)
	}
	return nil
}

// rowsPage is how many rows one rows request asks for.
const rowsPage = 256

// Rows returns every row of split ("train" or "eval"). An environment
// without that split gives a *ChildError of kind KindNoSplit.
func (b *Bridge) Rows(ctx context.Context, split string) ([]Row, error) {
	var rows []Row
	for {
		var page rowsResult
		req := request{Op: "rows", Split: split, Offset: len(rows), Limit: rowsPage}
		if err := b.call(ctx, req, &page); err != nil {
			return nil, err
		}
		rows = append(rows, page.Rows...)
		if len(page.Rows) == 0 || len(rows) >= page.Total {
			return rows, nil
		}
	}
}

// Reply plays one model turn of an episode: conv is the conversation so
// far, ending with the assistant's turn. input is the episode's row on its
// first turn (the child then starts the episode's State) and nil after.
func (b *Bridge) Reply(ctx context.Context, episode string, input *Row, conv []chat.Message) (Reply, error) {
	var r Reply
	err := b.call(ctx, request{Op: "reply", Episode: episode, Input: input, Messages: conv}, &r)
	return r, err
}

// Score scores a finished rollout with the environment's rubric. episode
// names the episode whose State the child kept ("" for a rollout not
// played through Reply); input is its row, from which the child rebuilds a
// State it does not have.
func (b *Bridge) Score(ctx context.Context, episode string, input Row, completion []chat.Message) (Score, error) {
	var s Score
	if completion == nil {
		completion = []chat.Message{}
	}
	err := b.call(ctx, request{Op: "score", Episode: episode, Input: &input, Completion: &completion}, &s)
	return s, err
}

// ScoreGroup scores the played episodes of one group together, as
// verifiers' score_group does for a rubric with group reward functions
// (Hello().GroupRewards). Scores are in the order of episodes; an episode
// the child no longer holds (it restarted) gets nil.
func (b *Bridge) ScoreGroup(ctx context.Context, episodes []string) ([]*Score, error) {
	var g groupResult
	if err := b.call(ctx, request{Op: "score_group", Episodes: episodes}, &g); err != nil {
		return nil, err
	}
	if len(g.Scores) != len(episodes) {
		return nil, fmt.Errorf("env %s: score_group: %d scores for %d episodes; this is a bug in grpo's bridge", b.target.ID, len(g.Scores), len(episodes))
	}
	return g.Scores, nil
}

// Drop tells the child to forget an episode that will not be scored.
func (b *Bridge) Drop(ctx context.Context, episode string) error {
	return b.call(ctx, request{Op: "drop", Episode: episode}, nil)
}

// Close ends the child: politely, then by force after a few seconds.
func (b *Bridge) Close() error {
	b.mu.Lock()
	b.closed = true
	c := b.c
	b.c = nil
	b.mu.Unlock()
	if c == nil || !c.alive() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.call(ctx, request{Op: "close"})
	c.stdin.Close()
	select {
	case <-c.dead:
	case <-ctx.Done():
		c.kill("it did not exit after close")
		<-c.dead
	}
	return nil
}
