package rollout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// PolicyEngine is an Engine whose policy a trainer updates: after each
// optimiser step SetPolicy makes later Plays sample from the adapter as
// it now is.
type PolicyEngine interface {
	Engine
	// SetPolicy makes later Plays sample from a as it is after step
	// (0: before the first). Calling it again for the same step does
	// nothing.
	SetPolicy(ctx context.Context, step int, a *lora.Adapter) error
	// Close releases what the engine holds (a server's loaded adapter).
	Close(ctx context.Context) error
}

// NewEngine is the engine a trainer generates its rollouts with: a
// KeptEngine over m (which carries the adapter being trained), whose
// sampler serves every step and eval, when srv is nil, else a
// ServerEngine on srv (see NewServerEngine).
func NewEngine(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, srv *endpoints.Client, o ServerOptions) (PolicyEngine, error) {
	if srv == nil {
		return NewKeptEngine(m, tok), nil
	}
	o.Tok = tok
	if o.Config == nil {
		o.Config = m.Config
	}
	return NewServerEngine(ctx, srv, o)
}

// SetPolicy does nothing: the model shares the adapter's buffers, which
// the optimiser updates in place.
func (LocalEngine) SetPolicy(context.Context, int, *lora.Adapter) error { return nil }

// Close does nothing.
func (LocalEngine) Close(context.Context) error { return nil }

// ServerOptions configure a ServerEngine.
type ServerOptions struct {
	// Model is the base model's name on the server; "" means each
	// replica's endpoint model.
	Model string
	// AdapterDir is where SetPolicy writes each step's adapter, as
	// AdapterDir/step-N; the server reads it from there, so it must be a
	// path the server sees (the same filesystem, or a shared mount at the
	// same path).
	AdapterDir string
	// BaseModel is the adapter_config.json's base_model_name_or_path.
	BaseModel string
	// Tok renders prompts and replies, as Local's tokenizer does; Config
	// sizes each episode's sequence as Local sizes a slot (and gives the
	// vocabulary the server's ids are checked against).
	Tok    *tokenizer.Tokenizer
	Config *model.Config
	// CheckTimeout bounds the check that the server is up and serves
	// Model; 0 means 30 s.
	CheckTimeout time.Duration
}

// ServerEngine plays episodes as Local does — the same prompts, replies
// appended as tokens, the same seeds, stop tokens and length limits —
// with each model turn generated on an OpenAI-compatible server (vLLM,
// grpo serve) through its completions API: the prompt is the sequence's
// token ids so far and the reply's token ids and raw log-probs
// (return_token_ids, logprobs) become the trajectory's, so the log-probs
// are the behaviour log-probs of the importance ratio. Turns run in lock
// step as Local's batch does: every active episode's next turn is
// requested at once.
//
// SetPolicy writes the adapter (lora.Save: atomically) to
// AdapterDir/step-N and loads it on every replica under the name
// "step-N" (POST /load_lora_adapter), so a new name per step keeps the
// server's prefix cache from serving keys computed under an older
// adapter; the previous step's adapter is then unloaded and its
// directory removed. Requests name the adapter as their model.
//
// A Producer plays on the engine from other goroutines while the trainer
// calls SetPolicy: each of its groups pins the adapter it started with,
// which stays loaded, after a newer one replaced it, until the last
// group playing it unpins it.
type ServerEngine struct {
	c *endpoints.Client
	o ServerOptions

	mu      sync.Mutex
	current string // the loaded adapter's name; "" before the first SetPolicy
	step    int
	pins    map[string]int // groups in flight per adapter (Producer)
}

// NewServerEngine checks that every replica of c is up and serves the
// base model, and returns an engine on it.
func NewServerEngine(ctx context.Context, c *endpoints.Client, o ServerOptions) (*ServerEngine, error) {
	switch {
	case o.Tok == nil || o.Config == nil:
		return nil, errors.New("rollouts: the server engine needs the model's tokenizer and config")
	case o.AdapterDir == "":
		return nil, errors.New("rollouts: the server engine needs a directory for the adapters it loads")
	}
	if o.CheckTimeout == 0 {
		o.CheckTimeout = 30 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, o.CheckTimeout)
	defer cancel()
	if err := c.CheckServes(cctx, o.Model); err != nil {
		return nil, err
	}
	return &ServerEngine{c: c, o: o, step: -1, pins: map[string]int{}}, nil
}

// Client is the engine's endpoint client.
func (s *ServerEngine) Client() *endpoints.Client { return s.c }

// Adapter is the name requests use as their model: the loaded step's
// adapter, or the base model's name before any.
func (s *ServerEngine) Adapter() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.adapterLocked()
}

func (s *ServerEngine) adapterLocked() string {
	if s.current != "" {
		return s.current
	}
	return s.o.Model
}

// SetPolicy saves a as step's adapter and has the server serve it (see
// ServerEngine).
func (s *ServerEngine) SetPolicy(ctx context.Context, step int, a *lora.Adapter) error {
	s.mu.Lock()
	same := step == s.step && s.current != ""
	s.mu.Unlock()
	if same {
		return nil
	}
	name := fmt.Sprintf("step-%d", step)
	dir, err := filepath.Abs(filepath.Join(s.o.AdapterDir, name))
	if err != nil {
		return err
	}
	if err := lora.Save(dir, a, s.o.BaseModel); err != nil {
		return fmt.Errorf("writing the adapter for the inference server: %w", err)
	}
	err = s.c.LoadLoRA(ctx, name, dir)
	var ee *endpoints.Error
	if errors.As(err, &ee) && ee.Status == 400 && name != s.Adapter() {
		// A server that outlived an earlier run may hold this name
		// already (vLLM and grpo serve refuse to load it twice).
		if s.c.UnloadLoRA(ctx, name) == nil {
			err = s.c.LoadLoRA(ctx, name, dir)
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		if cerr := ctx.Err(); cerr != nil {
			return cerr // interrupted: the run checkpoints, the server is not at fault
		}
		if errors.As(err, &ee) && ee.Status == 0 {
			// No reply at all: the server is down or unreachable, which
			// its LoRA settings cannot explain.
			return fmt.Errorf("loading adapter %s on the inference server: %w; start the server (grpo serve MODEL, or vLLM as docs/inference.md says) and resume the run", name, err)
		}
		return fmt.Errorf("loading adapter %s on the inference server: %w; the server must load LoRA adapters at run time and read %s (vLLM: --enable-lora, --max-lora-rank at least the adapter's rank, and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; grpo serve always can)", name, err, dir)
	}
	s.mu.Lock()
	old := s.current
	s.current, s.step = name, step
	pinned := s.pins[old] > 0
	s.mu.Unlock()
	if old != "" && old != name && !pinned {
		return s.drop(ctx, old)
	}
	return nil
}

// pin is the adapter a group of the Producer starts with, and its policy
// step; it stays loaded until unpin.
func (s *ServerEngine) pin() (name string, step int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name = s.adapterLocked()
	s.pins[name]++
	return name, max(s.step, 0)
}

// unpin lets go of a group's adapter, and unloads it when no group plays
// it any more and SetPolicy has replaced it.
func (s *ServerEngine) unpin(ctx context.Context, name string) error {
	s.mu.Lock()
	s.pins[name]--
	idle := s.pins[name] == 0
	if idle {
		delete(s.pins, name)
	}
	retired := idle && name != s.current && name != s.o.Model && name != ""
	s.mu.Unlock()
	if retired {
		return s.drop(ctx, name)
	}
	return nil
}

// drop unloads adapter name and removes its directory.
func (s *ServerEngine) drop(ctx context.Context, name string) error {
	err := s.c.UnloadLoRA(ctx, name)
	os.RemoveAll(filepath.Join(s.o.AdapterDir, name))
	if err != nil {
		return fmt.Errorf("unloading adapter %s from the inference server: %w", name, err)
	}
	return nil
}

// Close unloads the current adapter and removes its directory.
func (s *ServerEngine) Close(ctx context.Context) error {
	s.mu.Lock()
	name := s.current
	s.current, s.step = "", -1
	s.mu.Unlock()
	if name == "" {
		return nil
	}
	return s.drop(ctx, name)
}

// Play plays and scores the episodes, as Local does, on the server.
func (s *ServerEngine) Play(ctx context.Context, e env.Environment, exs []env.Example, perExample int, p sampler.Params, seed uint64, opts Options) ([]Trajectory, error) {
	s.mu.Lock()
	model, step := s.adapterLocked(), max(s.step, 0)
	s.mu.Unlock()
	return s.playAs(ctx, model, step, e, exs, perExample, p, seed, opts)
}

// playAs is Play with the requests naming model (an adapter, or the base
// model), policy step's, which the trajectories record.
func (s *ServerEngine) playAs(ctx context.Context, model string, step int, e env.Environment, exs []env.Example, perExample int, p sampler.Params, seed uint64, opts Options) ([]Trajectory, error) {
	switch {
	case e == nil:
		return nil, errors.New("rollouts: an environment is required")
	case perExample < 1:
		return nil, fmt.Errorf("rollouts: rollouts_per_example = %d: want at least 1", perExample)
	case opts.MaxTurns < 0:
		return nil, fmt.Errorf("rollouts: max_turns = %d: want a positive count, or 0 for no cap", opts.MaxTurns)
	case e.Rubric() == nil:
		return nil, fmt.Errorf("rollouts: environment %q has no rubric", e.ID())
	}
	st, err := newSetup(s.o.Tok, e, opts)
	if err != nil {
		return nil, err
	}
	prompts := renderPrompts(s.o.Tok, exs, st.chat)
	longest := 0
	for _, pr := range prompts {
		if pr.err == nil {
			longest = max(longest, len(pr.ids))
		}
	}
	maxLen := CacheLenReplies(s.o.Config, longest, p.MaxTokens, sizingTurns(e, opts.MaxTurns), ReplyTokens(e))
	run := &serverRunner{c: s.c, model: model, maxLen: max(2, maxLen), vocab: s.o.Config.VocabSize}
	trajs, err := play(ctx, run, s.o.Tok, e, exs, prompts, perExample, p, seed, opts, st)
	for i := range trajs {
		trajs[i].Policy = step
	}
	return trajs, err
}
