package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"time"

	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/optim"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/update"
)

// StepOptions size `grpo bench --grpo-step`: one whole GRPO step
// (generate, advantages, policy gradient, AdamW) through the code the
// trainer runs, sized like scripts/grpo_step_torch.py's so the two
// measure the same work.
type StepOptions struct {
	Enabled    bool   // --grpo-step: measure whole GRPO steps instead of the figures
	Prompts    int    // --step-prompts: examples per step
	Rollouts   int    // --step-rollouts: rollouts per example (the group)
	PromptLen  int    // --step-prompt-len: tokens of every prompt
	NewTokens  int    // --step-tokens: tokens every rollout generates, exactly
	MicroBatch int    // --step-micro-batch: micro_batch_tokens of the policy update
	CPUProfile string // --cpuprofile: a pprof CPU profile of the measured steps (not the warm-up) goes to this file
	NoSharing  bool   // --step-no-prefix-sharing: every rollout prefills and trains its own prompt
}

// Check refuses a step with nothing in it, naming the fields' flags.
func (o StepOptions) Check() error {
	if o.Prompts < 1 || o.Rollouts < 1 || o.PromptLen < 1 || o.NewTokens < 1 || o.MicroBatch < 1 {
		return errors.New("--step-prompts, --step-rollouts, --step-prompt-len, --step-tokens and --step-micro-batch must be >= 1")
	}
	return nil
}

// StepResult is one GRPO step's timing and what it did, so a caller (the
// test) can check that the step measured real work. Step is the whole
// step's time: of the best result, the best of the steps' own sums, which
// may exceed Generate + Train (each the best of its own).
type StepResult struct {
	Generate, Train, Step time.Duration
	GenTokens             int // tokens sampled over all rollouts
	TrainTokens           int // completion tokens with loss weight
	Loss, GradNorm        float64
}

// stepBench holds what every measured step shares: the policy, its
// optimizer, the prompts. Steps go on training the same adapter, as a run
// does; the work per step does not depend on the adapter's values.
type stepBench struct {
	policy  update.Policy
	o       StepOptions
	prompts [][]int32 // one per rollout: each example's prompt repeated rollouts times
	step    int
	// profiles, when set, gets a kernel profile of run's generate and of
	// its train phase.
	profiles *[]PhaseProfile
}

func newStepBench(base *model.Model, rank int, o StepOptions) (*stepBench, error) {
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	cfg := lora.DefaultConfig() // all seven projections
	cfg.Rank, cfg.Alpha = rank, float64(2*rank)
	ad, err := lora.New(base, cfg, 1)
	if err != nil {
		return nil, err
	}
	opt, err := optim.NewAdamW(base.Backend, update.OptimizerParams(ad), optim.DefaultConfig())
	if err != nil {
		ad.Free()
		return nil, err
	}
	sb := &stepBench{policy: update.Policy{Model: base.WithAdapter(ad), Adapter: ad, Optimizer: opt}, o: o}
	sb.policy.Model.NoPrefixSharing = o.NoSharing
	rng := rand.New(rand.NewPCG(11, 11))
	for range o.Prompts {
		p := make([]int32, o.PromptLen)
		for i := range p {
			p[i] = int32(rng.IntN(base.Config.VocabSize))
		}
		// Every rollout of a group starts from the same prompt and
		// prefills it itself, as the sampler does today (and as PyTorch's
		// generate(num_return_sequences=…) does by repeating the input).
		for range o.Rollouts {
			sb.prompts = append(sb.prompts, p)
		}
	}
	return sb, nil
}

func (sb *stepBench) free() { sb.policy.Adapter.Free() }

// run is one GRPO step as trainer.trainStep takes it, minus the
// tokenizer and environment a random-weight shape lacks: the sampler
// generates for every rollout at once on a cache sized as rollout.Local
// sizes it (a new sampler per step, as Local makes one), with no stop
// tokens so each rollout yields exactly newTokens tokens; a synthetic
// reward (the share of completion tokens in the lower half of the
// vocabulary, the same rule as the PyTorch script) gives group
// advantages; update.Step, the trainer's own update, does the rest.
func (sb *stepBench) run(ctx context.Context) (StepResult, error) {
	var r StepResult
	o, m := sb.o, sb.policy.Model
	sb.step++
	phase := func(name, note string, f func() error) error {
		if sb.profiles == nil {
			return f()
		}
		return addProfile(sb.profiles, m.Backend, name, note, func() error {
			if err := f(); err != nil {
				return err
			}
			return m.Backend.Sync()
		})
	}
	t0 := time.Now()
	var turns []sampler.Turn
	err := phase("grpo step: generate", "prefill and decode (decode steps as graph replays) of every rollout", func() error {
		s, err := sampler.New(m, nil, sampler.Config{Slots: len(sb.prompts), MaxLen: rollout.CacheLen(m.Config, o.PromptLen, o.NewTokens, 1),
			NoPrefixSharing: o.NoSharing})
		if err != nil {
			return err
		}
		params := make([]sampler.Params, len(sb.prompts))
		for i := range params {
			params[i] = sampler.DefaultParams() // temperature 1, no truncation
			params[i].MaxTokens = o.NewTokens
			params[i].Seed = sampler.DeriveSeed(uint64(sb.step), uint64(i/o.Rollouts), uint64(i%o.Rollouts))
		}
		turns, err = s.Generate(ctx, sb.prompts, params)
		s.Close()
		return err
	})
	if err != nil {
		return r, err
	}
	r.Generate = time.Since(t0)

	t1 := time.Now()
	rewards := make([]float32, len(turns))
	vocab := int32(m.Config.VocabSize)
	for i, t := range turns {
		if len(t.Tokens) != o.NewTokens {
			return r, fmt.Errorf("bench: rollout %d generated %d tokens, want exactly %d", i, len(t.Tokens), o.NewTokens)
		}
		r.GenTokens += len(t.Tokens)
		low := 0
		for _, tok := range t.Tokens {
			if tok < vocab/2 {
				low++
			}
		}
		rewards[i] = float32(low) / float32(len(t.Tokens))
	}
	rollouts := make([]update.Scored, len(turns))
	for i, t := range turns {
		rollouts[i] = update.Scored{Reward: rewards[i], Sample: loss.Sample{Prompt: sb.prompts[i], Completion: t.Tokens,
			OldLogp: t.Logprobs, Truncated: t.FinishReason == sampler.FinishLength}}
	}
	// Every rollout is trained, so the step's work does not hang on
	// whether a group's rewards happened to tie.
	lc := loss.DefaultConfig()
	lc.FilterZeroAdvantages = false
	var upd update.Stats
	err = phase("grpo step: train", "policy gradient over every micro-batch and the AdamW update (update.Step)", func() (err error) {
		upd, err = update.Step(sb.policy, rollouts, o.Rollouts,
			update.Settings{Loss: lc, MaxTokens: o.NewTokens, MicroBatchTokens: o.MicroBatch, MaxSteps: 1 << 30})
		return err
	})
	if err != nil {
		return r, err
	}
	r.Train = time.Since(t1)
	r.Step = r.Generate + r.Train
	r.TrainTokens, r.Loss, r.GradNorm = upd.Loss.Tokens, upd.Loss.Loss, upd.Optimizer.GradNorm
	return r, nil
}

// runStep measures o.Repeat GRPO steps after one warm-up step and
// returns the best generate, train and whole-step time (each the best of
// its own over the measured steps) with the last step's work and loss;
// with o.Profile, one more step's generate and train profiles.
func runStep(base *model.Model, o Options) (*StepResult, []PhaseProfile, error) {
	sb, err := newStepBench(base, o.LoRARank, o.Step)
	if err != nil {
		return nil, nil, err
	}
	defer sb.free()
	ctx := context.Background()
	if _, err := sb.run(ctx); err != nil { // warm-up: first-touch allocations, thread start-up
		return nil, nil, err
	}
	best, err := sb.measure(ctx, o)
	if err != nil || !o.Profile {
		return best, nil, err
	}
	var profiles []PhaseProfile
	sb.profiles = &profiles
	if _, err := sb.run(ctx); err != nil {
		return nil, nil, err
	}
	return best, profiles, nil
}

// measure runs the measured steps, under --cpuprofile's pprof profile
// when it names a file.
func (sb *stepBench) measure(ctx context.Context, o Options) (*StepResult, error) {
	if o.Step.CPUProfile != "" {
		f, err := os.Create(o.Step.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	var best StepResult
	best.Step = time.Duration(math.MaxInt64)
	for i := range o.Repeat {
		r, err := sb.run(ctx)
		if err != nil {
			return nil, err
		}
		if i == 0 || r.Generate < best.Generate {
			best.Generate = r.Generate
		}
		if i == 0 || r.Train < best.Train {
			best.Train = r.Train
		}
		best.Step = min(best.Step, r.Step)
		best.GenTokens, best.TrainTokens, best.Loss, best.GradNorm = r.GenTokens, r.TrainTokens, r.Loss, r.GradNorm
		if o.Progress.Step != nil {
			o.Progress.Step(i+1, r)
		}
	}
	return &best, nil
}
