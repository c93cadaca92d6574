package trainer

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/rollout"
)

// inferenceDir is where, in the run directory, the adapters a server
// loads are written (one step-N at a time).
const inferenceDir = "inference"

// openEngine picks where the run's rollouts are generated: in-process
// over the policy, or on [inference]'s server (rollout.NewEngine), which
// must be up and serve the base model now.
func (r *run) openEngine(ctx context.Context) error {
	var c *endpoints.Client
	in := r.cfg.Inference
	if in.On() {
		eps, err := r.cfg.InferenceEndpoints()
		if err != nil {
			return err
		}
		c, err = endpoints.New(eps, endpoints.Options{Timeout: in.RequestTimeout(), MaxConcurrent: in.MaxConcurrent,
			Logf: func(format string, args ...any) { r.dir.Logf(format, args...) }})
		if err != nil {
			return fmt.Errorf("[inference]: %w", err)
		}
	}
	eng, err := rollout.NewEngine(ctx, r.policy, r.tok, c, rollout.ServerOptions{AdapterDir: filepath.Join(r.dir.Path, inferenceDir), BaseModel: r.modelID})
	if err != nil {
		return fmt.Errorf("[inference] %s: %w; start the server first (grpo serve %s, or vLLM as docs/inference.md says) or fix [inference] in the config", serverName(in), err, r.cfg.Model)
	}
	if r.opts.samplerPerCall && !in.On() {
		eng = rollout.LocalEngine{Model: r.policy, Tok: r.tok}
	}
	r.engine = eng
	return r.openProducer()
}

// releaser is an engine that can free what it keeps between Plays
// (rollout.KeptEngine: its sampler).
type releaser interface{ Release() }

// releaseSampler frees the in-process sampler before the policy update
// when the memory plan does not let both be held (planKVPool).
func (r *run) releaseSampler() {
	if rel, ok := r.engine.(releaser); ok && !r.keepSampler {
		rel.Release()
	}
}

// serverName names [inference]'s server as the config does.
func serverName(in config.Inference) string {
	if in.URL != "" {
		return fmt.Sprintf("url = %q", in.URL)
	}
	return fmt.Sprintf("endpoint_id = %q", in.EndpointID)
}

// usePolicy has the engine generate with the adapter as it is after the
// last completed step: a server loads it as step-N on first use.
func (r *run) usePolicy(ctx context.Context) error {
	if err := r.engine.SetPolicy(ctx, r.step, r.adapter); err != nil {
		return fmt.Errorf("[inference] %w", err)
	}
	return nil
}

// closeEngine lets go of what the engine holds on a server, even when
// the run was cancelled.
func (r *run) closeEngine() {
	if r.producer != nil {
		r.producer.Stop() // before the adapters its groups pin are unloaded
	}
	if r.engine == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.engine.Close(ctx); err != nil {
		r.dir.Logf("warning: %v", err)
	}
}
