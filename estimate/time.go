package estimate

import (
	"context"
	"fmt"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/optim"
	"github.com/grpo-dev/grpo/update"
)

// StepTime is the time of one training step, extrapolated from a short
// warm-up measured on the real model and backend: a few decode steps at
// two batch sizes, one prefill, one micro-batch forward/backward and one
// AdamW update.
type StepTime struct {
	// Measured.
	PrefillPerToken time.Duration // per prompt token
	// Decode1 and DecodeN are one decode step of 1 and DecodeBatch
	// sequences; a batch of S is interpolated linearly between them.
	Decode1, DecodeN time.Duration
	DecodeBatch      int
	TrainPerToken    time.Duration // policy forward + backward (+ KL reference)
	TrainTokens      int           // the measured micro-batch
	Update           time.Duration // one AdamW update
	Warmup           time.Duration // wall time of the whole measurement

	// Extrapolated to the config.
	Generate, Train, Step, Total time.Duration
	Steps                        int
	Assumptions                  []string
}

// Summary is "≈ N s/step, ≈ T total for max_steps steps".
func (t *StepTime) Summary() string {
	return fmt.Sprintf("≈ %s/step (generate %s, train %s), ≈ %s total for %d steps",
		roundDuration(t.Step), roundDuration(t.Generate), roundDuration(t.Train), roundDuration(t.Total), t.Steps)
}

func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// warmupBudget bounds the arithmetic of the measured micro-batch (in
// multiply-adds × 6, a forward and backward per parameter and token), so
// the warm-up takes seconds: far less on a CPU than on a GPU.
func warmupBudget(device string) float64 {
	if device == "cpu" {
		return 2e10
	}
	return 2e13
}

// MeasureStepTime times a warm-up on base (a loaded model, or model.NewRandom
// of the same shape: the time does not depend on the values) with a fresh
// LoRA adapter from cfg, and scales it to the step that cfg and the
// environment shapes describe. Completions are taken at max_tokens.
func MeasureStepTime(ctx context.Context, base *model.Model, cfg *config.Config, train []EnvShape) (*StepTime, error) {
	start := time.Now()
	ad, err := lora.New(base, cfg.LoRA, uint64(cfg.Seed))
	if err != nil {
		return nil, err
	}
	defer ad.Free()
	policy := base.WithAdapter(ad)
	st := &StepTime{Steps: cfg.MaxSteps}
	maxSlots, prompt := 1, 1
	for _, s := range train {
		maxSlots = max(maxSlots, s.Examples*s.Rollouts)
		prompt = max(prompt, s.PromptTokens)
	}
	device := base.Backend.Name()
	st.DecodeBatch = min(maxSlots, 8)
	if device != "cpu" {
		st.DecodeBatch = min(maxSlots, 64)
	}
	measPrompt := min(prompt, 64)
	const decodeSteps = 8

	// The first call pays one-time costs (kernel loading on a GPU).
	if _, _, err := timeForward(policy, 1, 2, 1); err != nil {
		return nil, err
	}
	sizes := []int{1}
	if st.DecodeBatch > 1 {
		sizes = append(sizes, st.DecodeBatch)
	}
	for _, b := range sizes {
		prefill, decode, err := timeForward(policy, b, measPrompt, decodeSteps)
		if err != nil {
			return nil, err
		}
		if b == 1 {
			st.Decode1 = decode
		}
		st.DecodeN = decode
		st.PrefillPerToken = prefill / time.Duration(b*measPrompt)
	}

	perToken := 6 * float64(base.Config.ActiveParamCount()) // a mixture of experts runs k of its experts per token
	st.TrainTokens = max(16, min(cfg.MicroBatchTokens, 512, int(warmupBudget(device)/perToken)))
	// Sequences as long as the config's (mean prompt + max_tokens), since
	// attention's share grows with length; the faster of two runs when the
	// first is quick, as a loaded machine only ever adds time.
	length := min(st.TrainTokens, max(2, meanPrompt(train)+cfg.Sampling.MaxTokens))
	opt, err := optim.NewAdamW(base.Backend, update.OptimizerParams(ad), cfg.Optimizer)
	if err != nil {
		return nil, err
	}
	rollouts := warmupRollouts(st.TrainTokens, length, base.Config.VocabSize)
	tokens := 0
	for i := range rollouts {
		tokens += rollouts[i].Sample.SeqLen()
	}
	// The trainer's own update, timed in its two phases: the policy
	// gradient scales with a step's tokens, the optimizer step does not.
	p := update.Policy{Model: policy, Adapter: ad, Optimizer: opt}
	s := update.Settings{Loss: cfg.Loss, MaxTokens: cfg.Sampling.MaxTokens, MicroBatchTokens: cfg.MicroBatchTokens, MaxSteps: cfg.MaxSteps}
	s.Loss.FilterZeroAdvantages = false // every warm-up token is timed, whatever its synthetic reward
	for try := 0; try < 2; try++ {
		u, err := update.Step(p, rollouts, len(rollouts), s)
		if err != nil {
			return nil, fmt.Errorf("warm-up update: %w", err)
		}
		if d := u.PolicyGradientTime / time.Duration(tokens); try == 0 || d < st.TrainPerToken {
			st.TrainPerToken = d
		}
		if try == 0 || u.OptimizerTime < st.Update {
			st.Update = u.OptimizerTime
		}
		if u.PolicyGradientTime > 2*time.Second {
			break
		}
	}
	st.TrainTokens = tokens
	st.Warmup = time.Since(start)
	st.extrapolate(train)
	return st, nil
}

// extrapolate scales the measured rates to a step: per environment, each
// example's prompt (of mean length when known) is prefilled once and its
// other rollouts prefill only the prompt's last token (prefix sharing);
// per turn max_tokens decode steps of the rollouts held at once, in as
// many passes as the KV plan's cap (Concurrent) takes, with an env reply
// prefilled between turns; every token is trained once; one update.
func (st *StepTime) extrapolate(train []EnvShape) {
	var gen, tr time.Duration
	passes := 1
	for _, s := range train {
		slots := max(1, s.Examples*s.Rollouts)
		examples := max(1, min(s.Examples, slots))
		turns := max(1, s.MaxTurns)
		prompt := s.PromptTokens
		if s.MeanPromptTokens > 0 {
			prompt = s.MeanPromptTokens
		}
		held := slots
		if s.Concurrent > 0 {
			held = min(s.Concurrent, slots)
		}
		passes = max(passes, (slots+held-1)/held)
		// Between turns each rollout prefills the env's reply (taken at its
		// budget), and every token of the conversation is trained.
		replies := s.replyTokens() * (turns - 1)
		gen += time.Duration(examples*prompt+(slots-examples)+slots*replies) * st.PrefillPerToken
		decode := time.Duration(slots/held) * st.decodeStep(held)
		if r := slots % held; r > 0 {
			decode += st.decodeStep(r)
		}
		gen += time.Duration(s.MaxTokens*turns) * decode
		tr += time.Duration(slots*(prompt+s.MaxTokens*turns+replies)) * st.TrainPerToken
	}
	st.Generate, st.Train = gen, tr+st.Update
	st.Step = st.Generate + st.Train
	st.Total = st.Step * time.Duration(st.Steps)
	st.Assumptions = append(st.Assumptions,
		fmt.Sprintf("decode step: %s at 1 sequence, %s at %d, interpolated linearly to the sequences held at once", st.Decode1, st.DecodeN, st.DecodeBatch),
		fmt.Sprintf("prefill %s/token, each example's prompt once (its rollouts share the prompt's KV blocks); training %s/token measured on a %d-token micro-batch", st.PrefillPerToken, st.TrainPerToken, st.TrainTokens),
		"every completion runs to max_tokens; attention's growth with context length, choosing tokens from the logits, rewards and eval are not timed")
	if passes > 1 {
		st.Assumptions = append(st.Assumptions, fmt.Sprintf("the KV plan holds fewer rollouts than a step has: generation takes up to %d passes", passes))
	}
}

// meanPrompt is the mean prompt length of the first environment (the
// longest when the mean is unknown).
func meanPrompt(train []EnvShape) int {
	if len(train) == 0 {
		return AssumedPromptTokens
	}
	if train[0].MeanPromptTokens > 0 {
		return train[0].MeanPromptTokens
	}
	return train[0].PromptTokens
}

// decodeStep interpolates one decode step of slots sequences.
func (st *StepTime) decodeStep(slots int) time.Duration {
	if st.DecodeBatch <= 1 {
		return time.Duration(slots) * st.Decode1
	}
	per := float64(st.DecodeN-st.Decode1) / float64(st.DecodeBatch-1)
	return st.Decode1 + time.Duration(max(per, 0)*float64(slots-1))
}

// timeForward times what the sampler's forward calls cost: one prefill of
// b prompts of promptLen tokens, then steps decode calls of one token for
// each of the b sequences (the mean is returned), logits downloaded as the
// sampler does. Choosing the token from the logits is not timed.
func timeForward(m *model.Model, b, promptLen, steps int) (prefill, decode time.Duration, err error) {
	cache := m.NewKVCache(b, promptLen+steps)
	defer cache.Free()
	v := int32(m.Config.VocabSize)
	var batch model.Batch
	rows := make([]int32, b)
	for i := range b {
		for j := range promptLen {
			batch.Add(i, j, int32(i*7919+j*104729)%v)
		}
		rows[i] = int32(batch.Len() - 1)
	}
	t0 := time.Now()
	if _, err := m.Logits(cache, &batch, rows); err != nil {
		return 0, 0, fmt.Errorf("warm-up prefill: %w", err)
	}
	prefill = time.Since(t0)
	t0 = time.Now()
	for s := range steps {
		var d model.Batch
		for i := range b {
			d.Add(i, promptLen+s, int32(i+s)%v)
		}
		if _, err := m.Logits(cache, &d, nil); err != nil {
			return 0, 0, fmt.Errorf("warm-up decode: %w", err)
		}
	}
	return prefill, time.Since(t0) / time.Duration(steps), nil
}

// warmupRollouts are warmupSamples as one scored group, its rewards
// alternating so that the advantages, and so the gradients, are not zero.
func warmupRollouts(n, seqLen, vocab int) []update.Scored {
	var out []update.Scored
	for i, s := range warmupSamples(n, seqLen, vocab) {
		out = append(out, update.Scored{Sample: s, Reward: float32(i % 2)})
	}
	return out
}

// warmupSamples are rollouts of seqLen tokens (a quarter prompt) with
// arbitrary valid tokens, n positions in all (at least one rollout).
func warmupSamples(n, seqLen, vocab int) []loss.Sample {
	var out []loss.Sample
	for left := n; left > 0 || len(out) == 0; left -= seqLen {
		out = append(out, warmupSample(max(1, min(seqLen, left)), vocab))
	}
	return out
}

// warmupSample is one rollout of n trained positions: a quarter prompt,
// the rest completion, with arbitrary valid tokens.
func warmupSample(n, vocab int) loss.Sample {
	p := max(1, (n+1)/4)
	tok := func(i int) int32 { return int32(i*31+7) % int32(vocab) }
	s := loss.Sample{Advantage: 1}
	for i := range p {
		s.Prompt = append(s.Prompt, tok(i))
	}
	for i := p; i < n+1; i++ {
		s.Completion = append(s.Completion, tok(i))
	}
	s.OldLogp = make([]float32, len(s.Completion))
	for i := range s.OldLogp {
		s.OldLogp[i] = -5
	}
	return s
}
