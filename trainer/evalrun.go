package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/hub"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// DefaultEvalBatch is how many rollouts EvaluateInBatches plays at once when
// asked for 0: a sampler's KV cache holds one slot per rollout, so a 1000
// example eval in one pass would need a thousand slots.
const DefaultEvalBatch = 64

// EvaluateInBatches is Evaluate over the eval split in passes of at most
// batch rollouts (whole examples while an example's rollouts fit in one;
// else each example's rollouts split into passes of batch), which bounds
// the KV cache. onDone, if set, is called (from any goroutine, one call at a
// time) with the number of finished rollouts so far. The first pass uses
// o.Seed, so a split that fits one pass gives exactly Evaluate's result;
// the pass starting at example s uses sampler.DeriveSeed(o.Seed, s).
func EvaluateInBatches(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, e env.Environment, name string, o EvalOptions, batch int, onDone func(done int)) (EvalResult, error) {
	eng := rollout.NewKeptEngine(m, tok) // one sampler for every pass
	defer eng.Close(ctx)
	return EvaluateInBatchesWith(ctx, eng, e, name, o, batch, onDone)
}

// EvaluateInBatchesWith is EvaluateInBatches with the episodes played by
// eng.
func EvaluateInBatchesWith(ctx context.Context, eng rollout.Engine, e env.Environment, name string, o EvalOptions, batch int, onDone func(done int)) (EvalResult, error) {
	res := EvalResult{Env: name}
	k := max(1, o.RolloutsPerExample)
	if batch <= 0 {
		batch = DefaultEvalBatch
	}
	exs, err := e.Examples("eval")
	if err != nil {
		return res, fmt.Errorf("env %s: %w", name, err)
	}
	if o.NumExamples >= 0 && o.NumExamples < len(exs) {
		exs = exs[:o.NumExamples]
	}
	if len(exs) == 0 {
		return res, fmt.Errorf("env %s: the eval split is empty", name)
	}
	per := max(1, batch/k)
	var mu sync.Mutex
	done := 0
	tick := func(n int, absolute bool) {
		mu.Lock()
		defer mu.Unlock()
		if absolute {
			done = n
		} else {
			done += n
		}
		if onDone != nil {
			onDone(done)
		}
	}
	var rewardSum, pass1Sum, passKSum float64
	add := func(r EvalResult) {
		res.Examples += r.Examples
		res.Rollouts += r.Rollouts
		res.Errors += r.Errors
		res.Trajectories = append(res.Trajectories, r.Trajectories...)
		rewardSum += r.Reward * float64(r.Rollouts)
		pass1Sum += r.PassAt1 * float64(r.Examples)
		passKSum += r.PassAtK * float64(r.Examples)
	}
	// keep hands a pass's trajectories on as rows when o.Rows streams them
	// (its first example is example exOff, its first rollout roOff),
	// else leaves them in r for add.
	keep := func(r *EvalResult, exOff, roOff int) error {
		if o.Rows == nil {
			return nil
		}
		rows := r.rowsFrom(exOff, roOff)
		r.Trajectories = nil
		return o.Rows(rows)
	}
	if k > batch {
		// One example's rollouts alone exceed a pass: split them too.
		for i := range exs {
			r, err := evaluateSplitExample(ctx, eng, e, name, o, exs, i, k, batch, func() { tick(1, false) }, keep)
			if err != nil {
				return res, err
			}
			tick((i+1)*k, true)
			add(r)
		}
	}
	for start := 0; start < len(exs) && k <= batch; start += per {
		end := min(start+per, len(exs))
		po := o
		po.NumExamples, po.RolloutsPerExample = -1, k
		if start > 0 {
			po.Seed = sampler.DeriveSeed(o.Seed, uint64(start))
		}
		w := &windowEnv{Environment: e, exs: exs[start:end], done: func() { tick(1, false) }}
		r, err := EvaluateWith(ctx, eng, w, name, po)
		if err != nil {
			return res, err
		}
		tick(end*k, true) // episodes cut off by a length limit never said done
		if err := keep(&r, start, 0); err != nil {
			return res, err
		}
		add(r)
	}
	res.Reward = rewardSum / float64(res.Rollouts)
	res.PassAt1 = pass1Sum / float64(res.Examples)
	res.PassAtK = passKSum / float64(res.Examples)
	return res, nil
}

// evaluateSplitExample evaluates example i's k rollouts in passes of at
// most batch (the pass at rollout c seeded by DeriveSeed(seed, i, c)), so
// the KV cache and the episodes in flight stay at batch whatever k is, and
// combines them into one example's result: pass@1 and pass@k over all k.
func evaluateSplitExample(ctx context.Context, eng rollout.Engine, e env.Environment, name string, o EvalOptions, exs []env.Example, i, k, batch int, done func(), keep func(r *EvalResult, exOff, roOff int) error) (EvalResult, error) {
	res := EvalResult{Env: name, Examples: 1}
	threshold := o.PassThreshold
	if threshold == 0 {
		threshold = 1
	}
	var sum float64
	solved := 0
	for c := 0; c < k; c += batch {
		po := o
		po.NumExamples, po.RolloutsPerExample = -1, min(batch, k-c)
		po.Seed = sampler.DeriveSeed(o.Seed, uint64(i), uint64(c))
		w := &windowEnv{Environment: e, exs: exs[i : i+1], done: done}
		r, err := EvaluateWith(ctx, eng, w, name, po)
		if err != nil {
			return res, err
		}
		for _, t := range r.Trajectories {
			sum += t.Reward
			if t.Reward >= threshold-1e-9 {
				solved++
			}
		}
		res.Rollouts += r.Rollouts
		res.Errors += r.Errors
		if err := keep(&r, i, c); err != nil {
			return res, err
		}
		res.Trajectories = append(res.Trajectories, r.Trajectories...)
	}
	res.Reward = sum / float64(res.Rollouts)
	res.PassAt1 = float64(solved) / float64(k)
	if solved > 0 {
		res.PassAtK = 1
	}
	return res, nil
}

// windowEnv shows Evaluate one window of the eval split and reports each
// episode that ends.
type windowEnv struct {
	env.Environment
	exs  []env.Example
	done func()
}

func (w *windowEnv) Examples(split string) ([]env.Example, error) {
	if split == "eval" {
		return w.exs, nil
	}
	return w.Environment.Examples(split)
}

func (w *windowEnv) NewEpisode(ex env.Example) env.Episode {
	return &countedEpisode{Episode: w.Environment.NewEpisode(ex), done: w.done}
}

// MaxTurns forwards env.TurnLimiter (1 when e has none: what the cache
// sizing assumes then anyway).
func (w *windowEnv) MaxTurns() int {
	if tl, ok := w.Environment.(env.TurnLimiter); ok {
		return tl.MaxTurns()
	}
	return 1
}

// ReplyTokens forwards env.ReplySizer (0: the default budget).
func (w *windowEnv) ReplyTokens() int {
	if rs, ok := w.Environment.(env.ReplySizer); ok {
		return rs.ReplyTokens()
	}
	return 0
}

// Tools forwards env.ToolEnvironment, so a tool environment keeps its
// tools when evaluated in windows.
func (w *windowEnv) Tools() []env.Tool { return env.ToolsOf(w.Environment) }

type countedEpisode struct {
	env.Episode
	done func()
	once sync.Once
}

// Tools forwards env.ToolEpisode (nil: the environment's tools).
func (c *countedEpisode) Tools() []env.Tool {
	if te, ok := c.Episode.(env.ToolEpisode); ok {
		return te.Tools()
	}
	return nil
}

// Close forwards io.Closer, so an episode's resources are released.
func (c *countedEpisode) Close() error {
	if cl, ok := c.Episode.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

func (c *countedEpisode) Respond(ctx context.Context, assistant string) ([]chat.Message, bool, error) {
	reply, done, err := c.Episode.Respond(ctx, assistant)
	if done || err != nil {
		c.once.Do(c.done)
	}
	return reply, done, err
}

// EvalRow is one rollout of an evaluation, as a line of the results JSONL.
type EvalRow struct {
	Env          string `json:"env"`
	ExampleID    string `json:"example_id"`
	ExampleIndex int    `json:"example_index"`
	// Rollout is the rollout's index among its example's k.
	Rollout          int                `json:"rollout"`
	Prompt           []chat.Message     `json:"prompt"`
	Completion       []chat.Message     `json:"completion"`
	Answer           string             `json:"answer"`
	Reward           float64            `json:"reward"`
	Metrics          map[string]float64 `json:"metrics"`
	Errors           []string           `json:"errors"`
	FinishReason     string             `json:"finish_reason"`
	Turns            int                `json:"turns"`
	Truncated        bool               `json:"truncated"`
	TruncatedBy      string             `json:"truncated_by,omitempty"` // rollout.TruncatedMaxTokens or TruncatedContext
	CompletionTokens int                `json:"completion_tokens"`
	Info             map[string]any     `json:"info,omitempty"`
}

// Rows turns r's trajectories into results rows, in order: example i's
// rollout j is row i*k+j.
func (r EvalResult) Rows() []EvalRow { return r.rowsFrom(0, 0) }

// rowsFrom is Rows for one pass of a larger eval whose first example is
// example exOff and whose first rollout is rollout roOff of its example.
func (r EvalResult) rowsFrom(exOff, roOff int) []EvalRow {
	k := 1
	if r.Examples > 0 {
		k = max(1, r.Rollouts/r.Examples)
	}
	rows := make([]EvalRow, len(r.Trajectories))
	for i, t := range r.Trajectories {
		metrics := map[string]float64{}
		for name, v := range t.ToolMetrics {
			metrics[name] = v
		}
		for name, v := range t.Metrics {
			if !math.IsNaN(v) && !math.IsInf(v, 0) { // JSON has no NaN
				metrics[name] = v
			}
		}
		errs := t.Errors
		if errs == nil {
			errs = []string{}
		}
		completion := t.Messages
		if completion == nil {
			completion = []chat.Message{}
		}
		rows[i] = EvalRow{Env: r.Env, ExampleID: t.ID, ExampleIndex: exOff + i/k, Rollout: roOff + i%k,
			Prompt: t.Prompt, Completion: completion, Answer: t.Answer, Reward: t.Reward,
			Metrics: metrics, Errors: errs, FinishReason: t.FinishReason, Turns: t.Turns,
			Truncated: t.Truncated, TruncatedBy: t.TruncatedBy, CompletionTokens: len(t.Tokens), Info: t.Info}
	}
	return rows
}

// WriteEvalRows writes rows as JSON lines.
func WriteEvalRows(w io.Writer, rows []EvalRow) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range rows {
		if err := enc.Encode(&rows[i]); err != nil {
			return fmt.Errorf("results row %d: %w", i, err)
		}
	}
	return nil
}

// EvalRunOptions configure RunEvals.
type EvalRunOptions struct {
	// Batch is the rollouts per pass (0: DefaultEvalBatch).
	Batch int
	// Download hears how model downloads advance (nil: quiet).
	Download func(hub.FileProgress)
	// OnStart is called before each evaluation with its total rollouts;
	// OnDone with the finished rollouts of the current one.
	OnStart func(spec config.EvalSpec, total int)
	OnDone  func(done int)
	// Backend runs the models instead of opening each spec's device.
	Backend kernels.Backend
	// PassThreshold is the reward at which a rollout counts as solved for
	// pass@k (0: 1, fully correct).
	PassThreshold float64
	// Endpoints, when set, is the endpoints.toml registry: a spec whose
	// model is one of its endpoint ids is evaluated on that endpoint
	// (generation through its client, the rubric here) instead of a model
	// loaded in process.
	Endpoints *endpoints.Registry
	// Rows, when set, receives every results row pass by pass (see
	// EvalOptions.Rows), so the results never sit in memory all at once;
	// the returned results then hold no trajectories. ResultsDir is the
	// directory they are written to, whose free disk space the evals are
	// checked against before they start.
	Rows       func([]EvalRow) error
	ResultsDir string
}

// RunEvals runs the evaluations in order, loading each distinct model (and
// adapter) once. It checks every environment id and its args before it
// loads a model, so a typo fails at once.
func RunEvals(ctx context.Context, specs []config.EvalSpec, o EvalRunOptions) ([]EvalResult, error) {
	envs := make([]env.Environment, len(specs))
	for i, s := range specs {
		e, err := env.New(s.ID, s.Args)
		if err != nil {
			return nil, fmt.Errorf("eval %s: %w", s.Name, err)
		}
		envs[i] = e
	}
	cache := map[string]rollout.Engine{}
	defer func() {
		for _, eng := range cache {
			if ke, ok := eng.(*rollout.KeptEngine); ok {
				ke.Release()
			}
		}
	}()
	var out []EvalResult
	for i, s := range specs {
		key := s.Model + "\x00" + s.Adapter + "\x00" + s.Device
		eng, ok := cache[key]
		if !ok {
			var err error
			if eng, err = evalEngine(ctx, s, o); err != nil {
				return out, err
			}
			cache[key] = eng
		}
		exs, err := envs[i].Examples("eval")
		if err != nil {
			return out, fmt.Errorf("eval %s: %w", s.Name, err)
		}
		n := len(exs)
		if s.NumExamples >= 0 {
			n = min(n, s.NumExamples)
		}
		// Only a model loaded here holds a KV cache to fit; an endpoint's
		// results are checked by nothing but the disk they are written to.
		if le, local := eng.(*rollout.KeptEngine); local {
			if err := checkEvalFits(s, le.Model, envs[i], n, o.Batch, resultsDir(o)); err != nil {
				return out, err
			}
		}
		if o.OnStart != nil {
			_, total := evalPasses(n, s.RolloutsPerExample, o.Batch)
			o.OnStart(s, total)
		}
		res, err := EvaluateInBatchesWith(ctx, eng, envs[i], s.Name, EvalOptions{
			NumExamples: s.NumExamples, RolloutsPerExample: s.RolloutsPerExample,
			Sampling: s.Sampling, EnableThinking: s.EnableThinking, Seed: s.Seed, PassThreshold: o.PassThreshold,
			Rows: o.Rows}, o.Batch, o.OnDone)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// evalEngine plays a spec's episodes: on the endpoint its model names, or
// with the model (and adapter) loaded here.
func evalEngine(ctx context.Context, s config.EvalSpec, o EvalRunOptions) (rollout.Engine, error) {
	if o.Endpoints != nil {
		if _, ok := o.Endpoints.Lookup(s.Model); ok {
			if s.Adapter != "" {
				return nil, fmt.Errorf("eval %s: --adapter applies to a model loaded here, and %s is an endpoint of %s; load the adapter on the server and name it in endpoints.toml", s.Name, s.Model, o.Endpoints.Path)
			}
			c, err := o.Endpoints.Client(s.Model, endpoints.Options{})
			if err != nil {
				return nil, err
			}
			if c.Type() != endpoints.TypeChat {
				return nil, fmt.Errorf("eval %s: endpoint %s has type %s; grpo eval plays episodes as chat, so it needs type = %q", s.Name, s.Model, c.Type(), endpoints.TypeChat)
			}
			return rollout.RemoteEngine{Gen: rollout.EndpointGenerator(c, rollout.EndpointOptions{EnableThinking: s.EnableThinking})}, nil
		}
	}
	m, tok, err := loadEvalModel(ctx, s, o)
	if err != nil {
		return nil, err
	}
	// Kept: the passes of every eval of this model share one sampler.
	return rollout.NewKeptEngine(m, tok), nil
}

// resultsDir is where o streams the results, "" when they are held.
func resultsDir(o EvalRunOptions) string {
	switch {
	case o.Rows == nil:
		return ""
	case o.ResultsDir == "":
		return "."
	}
	return o.ResultsDir
}

func loadEvalModel(ctx context.Context, s config.EvalSpec, o EvalRunOptions) (*model.Model, *tokenizer.Tokenizer, error) {
	be := o.Backend
	if be == nil {
		var err error
		if be, err = kernels.Open(s.Device); err != nil {
			return nil, nil, fmt.Errorf("device %q: %w", s.Device, err)
		}
	}
	dir, err := hub.Resolve(ctx, s.Model, hub.Options{Progress: o.Download})
	if err != nil {
		return nil, nil, fmt.Errorf("model %q: %w", s.Model, err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("model %q: %w", s.Model, err)
	}
	m, err := model.Load(dir, be)
	if err != nil {
		return nil, nil, fmt.Errorf("model %q: %w", s.Model, err)
	}
	if tok.VocabSize() > m.Config.VocabSize {
		return nil, nil, fmt.Errorf("model %s: the tokenizer has %d tokens but the model's vocab_size is %d; they do not belong together", s.Model, tok.VocabSize(), m.Config.VocabSize)
	}
	if s.Adapter != "" {
		a, err := lora.Load(s.Adapter, m)
		if err != nil {
			return nil, nil, fmt.Errorf("adapter %q: %w", s.Adapter, err)
		}
		m = m.WithAdapter(a)
	}
	return m, tok, nil
}

// OverallReward is the mean reward over every rollout of results.
func OverallReward(results []EvalResult) float64 {
	var sum, n float64
	for _, r := range results {
		sum += r.Reward * float64(r.Rollouts)
		n += float64(r.Rollouts)
	}
	if n == 0 {
		return 0
	}
	return sum / n
}
