package trainer

import (
	"context"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/grpo-dev/grpo/curriculum"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/update"
)

// samplingParams is [sampling]'s sampler.Params; the seed and stop tokens
// are per rollout and per tokenizer, set where they are known.
func (r *run) samplingParams() sampler.Params {
	p := r.cfg.Sampling.Params
	p.Seed, p.StopTokens = 0, nil
	return p
}

// rollouts plays perExample episodes of each example of one environment.
func (r *run) rollouts(ctx context.Context, k int, exs []env.Example, perExample int, p sampler.Params, seed uint64, timing *rollout.Timing) ([]rollout.Trajectory, error) {
	var t rollout.Timing
	trajs, err := r.engine.Play(ctx, r.envs[k].env, exs, perExample, p, seed, rollout.Options{EnableThinking: r.cfg.Sampling.EnableThinking, ReasoningEffort: r.cfg.Sampling.ReasoningEffort, Timing: &t, KVBlocks: r.kvBlocks,
		RecordExperts: r.cfg.Loss.RoutingReplay && r.policy.Config.SparseLayers() > 0, Overlap: r.overlap.On[k]})
	timing.Add(t)
	r.overlap.Record(k, t)
	return trajs, err
}

// trainStep runs one GRPO step: sample and score rollouts, compute
// advantages, the policy gradient and one AdamW update, then log.
func (r *run) trainStep(ctx context.Context) error {
	cfg, step := r.cfg, r.step+1
	t0 := time.Now()
	R := cfg.RolloutsPerExample
	if err := r.usePolicy(ctx); err != nil {
		return fmt.Errorf("step %d: %w", step, err)
	}
	cursors := append([]int(nil), r.sched.Cursors...)
	var pools *curriculum.Pools
	if r.pools != nil {
		pools = r.pools.Clone()
	}
	undo := func() { // the step did not happen
		copy(r.sched.Cursors, cursors)
		r.pools = pools
	}
	var timing rollout.Timing
	pl, err := r.playStep(ctx, step, &timing)
	if err != nil {
		undo()
		return fmt.Errorf("step %d: %w", step, err)
	}
	trajs, envOf := pl.trajs, pl.envOf
	drew := 0
	for k, c := range r.sched.Cursors {
		drew += c - cursors[k]
	}
	tGen := time.Since(t0)
	r.releaseSampler()

	rewards := make([]float32, len(trajs))
	rollouts := make([]update.Scored, 0, len(trajs))
	for i, t := range trajs {
		rewards[i] = float32(t.Reward)
		if !pl.train[i] {
			continue // dropped by online difficulty filtering
		}
		s := loss.Sample{Prompt: t.PromptTokens, Completion: t.Tokens, ModelMask: t.ModelMask,
			OldLogp: t.Logprobs, Truncated: t.Truncated}
		if len(t.Experts) == r.policy.Config.RoutingLen(s.SeqLen()) {
			// The routing of every token the training forward reads
			// (an episode whose last environment reply was never read
			// has none recorded for it, and is routed afresh).
			s.Experts = t.Experts
		}
		rollouts = append(rollouts, update.Scored{Sample: s, Reward: rewards[i], Others: t.OtherSamples()})
	}
	t1 := time.Now()
	upd, err := r.reps.Step(rollouts, R, update.Settings{Loss: cfg.Loss, MaxTokens: cfg.Sampling.MaxTokens, MicroBatchTokens: cfg.MicroBatchTokens, MaxSteps: cfg.MaxSteps})
	if err != nil {
		undo()
		return fmt.Errorf("step %d: %w", step, err)
	}
	tTrain := time.Since(t1)
	r.step = step
	overlapped := r.overlap.Overlapped()
	r.overlap.Decide()
	// A checkpoint bounds its cursors by the most one step drew (pooled
	// examples passed over and refills draw more than the batch).
	r.maxPerStep = max(r.maxPerStep, drew)

	m := r.stepMetrics(trajs, envOf, rewards, upd)
	maps.Copy(m, pl.metrics)
	if r.pools != nil {
		maps.Copy(m, r.pools.Metrics())
		m["filter/refill_groups"] = float64(pl.refill)
	}
	m["time/generate"] = timing.Play.Seconds()
	m["time/score"] = timing.Score.Seconds()
	m["time/rollouts"] = tGen.Seconds()
	m["time/train"] = tTrain.Seconds()
	m["time/env_replies"] = timing.Respond.Seconds()
	m["rollouts/overlapped_envs"] = float64(overlapped)
	m["time/step"] = time.Since(t0).Seconds()
	m["tokens_per_s"] = m["tokens/total"] / time.Since(t0).Seconds()
	if _, ok := r.engine.(releaser); ok {
		m["sampler/kept"] = 0
		if r.keepSampler {
			m["sampler/kept"] = 1 // the sampler lived through the update (planKVPool)
		}
	}
	row := map[string]any{"step": step}
	for k, v := range m {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			row[k] = v
		}
	}
	if err := r.sinks.Step(row); err != nil {
		return err
	}
	errs := rollout.CountFailures(trajs)
	r.dir.Logf("step %d reward %.4f loss %.5f grad_norm %.4f kl %.5f entropy %.4f lr %.3g%s", step, m["reward"], m["loss"], m["grad_norm"], m["kl"], m["entropy"], m["lr"], errs.Suffix())
	for _, w := range r.health.Observe(rewards, upd.Advantages.FracZeroStd) {
		r.dir.Logf("warning: %s", w)
		r.bar.note("warning: %s", w)
	}
	r.bar.stepDoneLine(step, m, stepLine(step, m)+errs.Suffix())
	if r.opts.onStep != nil {
		r.opts.onStep(StepResult{Step: step, Metrics: m})
	}
	return r.checkErrorSteps(step, errs)
}

// stepMetrics gathers one step's numbers for metrics.jsonl.
func (r *run) stepMetrics(trajs []rollout.Trajectory, envOf []int, rewards []float32, st update.Stats) map[string]float64 {
	m := st.Metrics()
	maps.Copy(m, rollout.Summarize(trajs))
	perEnv := make([]float64, len(r.envs))
	perEnvN := make([]float64, len(r.envs))
	for i := range trajs {
		perEnv[envOf[i]] += float64(rewards[i])
		perEnvN[envOf[i]]++
	}
	for k, te := range r.envs {
		if perEnvN[k] > 0 {
			m["env/"+te.name+"/reward"] = perEnv[k] / perEnvN[k]
		}
	}
	return m
}
