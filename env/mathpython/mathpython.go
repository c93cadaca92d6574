// Package mathpython is the math-python builtin: math problems solved with
// a sandboxed, persistent python tool, as verifiers' math_python. It
// registers itself with package env on init.
package mathpython

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/env/mathenv"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/sandbox"
)

// math-python is verifiers 8d4b33247's environments/math_python: math
// problems the model solves with a `python` tool (verifiers' PythonEnv: a
// persistent REPL per rollout), scored by MathRubric on the last \boxed{}.
// Its data are math's (same dataset args; "synthetic" needs no network).
// Departures: the REPL is a warm sandboxed interpreter (package sandbox,
// docs/sandbox.md) instead of a remote container, so packages cannot be
// pip-installed — pip_install_packages may name only what Debian's
// python3 has in the sandbox, and those are preloaded; the sandbox_* args
// of verifiers' remote containers that have a local meaning map to
// sandbox.Config (below), the others are not accepted.

// mathPythonPackages are the packages the sandbox's python3 has.
var mathPythonPackages = map[string]bool{"numpy": true, "sympy": true, "scipy": true}

// mathPythonSystemPrompt is verifiers' system prompt for the packages.
func mathPythonSystemPrompt(packages []string) string {
	p := "Use Python for all calculations. Give your answer inside \\boxed{}."
	if len(packages) > 0 {
		return p + "\n\nIn addition to the Python standard library, you have access to: " + strings.Join(packages, " ") + "."
	}
	return p + "\n\nYou may only use the Python standard library."
}

// pythonToolSchema is verifiers' python(code: str) tool as its
// function-to-schema conversion shows it to the model.
const pythonToolSchema = `{"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}`

const pythonToolDescription = "Execute `code` inside persistent Python REPL."

func init() {
	env.MustRegister(env.Spec{
		ID:          "math-python",
		Description: `math problems solved with a sandboxed, persistent python tool (verifiers 8d4b33247's math_python); reward = correct_answer: math-verify on the last \boxed{}`,
		Data:        `as math: verifiers' "math" example set (hub chiayewken/competition_math); dataset_name = "math500", a hub id, or "synthetic" (no network)`,
		Args: append(append([]env.ArgSpec{
			{Name: "max_turns", Type: env.ArgInt, Default: 100, Help: "model turns per episode"},
		}, mathenv.DatasetArgs...), []env.ArgSpec{
			{Name: "pip_install_packages", Type: env.ArgString, Default: "numpy sympy scipy", Help: `packages the model may import, preloaded; only numpy, sympy and scipy exist in the sandbox ("" = standard library only)`},
			{Name: "max_startup_wait_seconds", Type: env.ArgInt, Default: 60, Help: "longest wait for an interpreter to start"},
			{Name: "sandbox_timeout_per_command_seconds", Type: env.ArgInt, Default: 60, Help: "wall-clock limit of one python call"},
			{Name: "sandbox_memory_gb", Type: env.ArgInt, Default: 2, Help: "memory of one interpreter (cgroup memory.max where delegated)"},
			{Name: "pool_size", Type: env.ArgInt, Default: 4, Help: "interpreters kept warm ahead of episodes (grpo's; verifiers starts one container per rollout)"},
		}...),
		New: newMathPython,
	})
}

type mathPython struct {
	data     env.Environment
	maxTurns int
	cfg      sandbox.Config
	poolSize int

	once    sync.Once
	pool    *sandbox.Pool
	poolErr error
}

func newMathPython(a env.Args, o env.Options) (env.Environment, error) {
	if err := lab.CheckDatasetName(a); err != nil {
		return nil, err
	}
	packages := strings.Fields(a.String("pip_install_packages"))
	for _, p := range packages {
		if !mathPythonPackages[p] {
			return nil, fmt.Errorf("pip_install_packages names %q: the sandbox cannot install packages (it has no network); its python3 has numpy, sympy and scipy only", p)
		}
	}
	for _, n := range []string{"max_turns", "max_startup_wait_seconds", "sandbox_timeout_per_command_seconds", "sandbox_memory_gb", "pool_size"} {
		if a.Int(n) < 1 {
			return nil, fmt.Errorf("%s = %d: want at least 1", n, a.Int(n))
		}
	}
	cfg := sandbox.Config{
		Preload:      packages,
		StartTimeout: time.Duration(a.Int("max_startup_wait_seconds")) * time.Second,
		Timeout:      time.Duration(a.Int("sandbox_timeout_per_command_seconds")) * time.Second,
		Memory:       int64(a.Int("sandbox_memory_gb")) << 30,
	}
	// CPU time is per interpreter life (an episode): room for a call that
	// uses its whole wall-clock limit, and more.
	cfg.CPUTime = max(60*time.Second, 2*cfg.Timeout)
	// Refuse here, with sandbox's one line (how to enable it), rather than
	// turn every python call of a run into an error.
	if err := sandbox.Check(cfg); err != nil {
		return nil, fmt.Errorf("math-python runs model-written code: %w", err)
	}
	data := maps.Clone(a)
	data["system_prompt"] = mathPythonSystemPrompt(packages)
	return &mathPython{data: mathenv.New("math-python", data, o), maxTurns: a.Int("max_turns"), cfg: cfg, poolSize: a.Int("pool_size")}, nil
}

func (e *mathPython) ID() string                                   { return "math-python" }
func (e *mathPython) Examples(split string) ([]env.Example, error) { return e.data.Examples(split) }
func (e *mathPython) Rubric() *rubric.Rubric                       { return lab.MathRubric }
func (e *mathPython) MaxTurns() int                                { return e.maxTurns }
func (e *mathPython) ReplyTokens() int                             { return env.ToolReplyTokens }

// Tools is the schema the prompt shows; calls go to each episode's own
// python (mathPythonEpisode.Tools), never to this one.
func (e *mathPython) Tools() []env.Tool {
	return []env.Tool{e.pythonTool(func(context.Context) (*sandbox.Interpreter, error) {
		return nil, errors.New("python: called outside an episode")
	})}
}

func (e *mathPython) NewEpisode(env.Example) env.Episode { return &mathPythonEpisode{env: e} }

// interpreters starts the pool on first use: building the environment
// (grpo env show, estimate) starts no interpreter.
func (e *mathPython) interpreters() (*sandbox.Pool, error) {
	e.once.Do(func() { e.pool, e.poolErr = sandbox.NewPool(e.cfg, e.poolSize) })
	return e.pool, e.poolErr
}

func (e *mathPython) pythonTool(interp func(context.Context) (*sandbox.Interpreter, error)) env.Tool {
	t, err := env.NewFuncTool("python", pythonToolDescription, pythonToolSchema, func(ctx context.Context, args json.RawMessage) (string, error) {
		var a struct {
			Code string `json:"code"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return "", fmt.Errorf("python: %v", err)
		}
		it, err := interp(ctx)
		if err != nil {
			return "", err
		}
		res, err := it.Run(ctx, a.Code)
		if err != nil {
			return "", fmt.Errorf("python: %v", err)
		}
		return res.Text(), nil
	})
	if err != nil {
		panic(err) // the schema is a constant
	}
	return t
}

// mathPythonEpisode holds one interpreter, taken from the pool at the
// episode's first python call (an episode that answers outright takes
// none) and released by Close, so variables persist across the episode's
// calls and never cross into another episode.
type mathPythonEpisode struct {
	env    *mathPython
	mu     sync.Mutex
	it     *sandbox.Interpreter
	closed bool // a call after Close must not take a fresh interpreter no one releases
}

func (ep *mathPythonEpisode) Respond(context.Context, string) ([]chat.Message, bool, error) {
	return nil, true, nil // a turn without a tool call is the answer
}

func (ep *mathPythonEpisode) Tools() []env.Tool { return []env.Tool{ep.env.pythonTool(ep.interpreter)} }

func (ep *mathPythonEpisode) interpreter(ctx context.Context) (*sandbox.Interpreter, error) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.closed {
		return nil, errors.New("python: the episode has ended")
	}
	if ep.it != nil {
		return ep.it, nil
	}
	pool, err := ep.env.interpreters()
	if err != nil {
		return nil, fmt.Errorf("python: %v", err)
	}
	if ep.it, err = pool.Acquire(ctx); err != nil {
		return nil, fmt.Errorf("python: no interpreter: %v", err)
	}
	return ep.it, nil
}

func (ep *mathPythonEpisode) Close() error {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	ep.closed = true
	if ep.it != nil {
		ep.env.pool.Release(ep.it)
		ep.it = nil
	}
	return nil
}
