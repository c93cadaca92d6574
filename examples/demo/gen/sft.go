package main

import (
	"context"
	"fmt"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"math/rand/v2"
	"path/filepath"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/eval"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/optim"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
	"github.com/grpo-dev/grpo/update"
)

// sft is the state of the warm start: a LoRA adapter on the random base
// and its AdamW optimizer.
type sft struct {
	policy update.Policy
	tok    *tokenizer.Tokenizer
	env    env.Environment
	train  []env.Example
	rng    *rand.Rand
	o      options
}

// warmStart fine-tunes the model in modelDir in two phases and returns the
// base the final adapter belongs to with that adapter. The skill phase
// trains on the reversals until the sampled eval reward reaches o.target
// (or o.maxSteps); the habit phase then trains o.habitSteps more steps on
// demonstrations of which a share o.refuse are the refusal, so the model
// keeps its skill but often declines to use it.
//
// With o.roundSteps > 0 the skill phase runs in rounds: each round trains a
// fresh adapter for at most o.roundSteps steps and merges it into the base
// (written under workDir), because a LoRA adapter on a frozen random base
// plateaus early while a base that absorbs each round keeps learning.
func warmStart(modelDir, workDir, envDir string, o options) (string, *lora.Adapter, error) {
	for round, done := 1, 0; ; round++ {
		steps := o.maxSteps - done
		if o.roundSteps > 0 {
			steps = min(steps, o.roundSteps)
		}
		s, err := newSFT(modelDir, envDir, o)
		if err != nil {
			return "", nil, err
		}
		reached, err := s.skill(done, steps)
		if err != nil {
			return "", nil, err
		}
		done += steps
		if reached || done >= o.maxSteps {
			return modelDir, s.policy.Adapter, s.habit()
		}
		next := filepath.Join(workDir, fmt.Sprintf("round-%d", round))
		if err := lora.WriteMerged(next, modelDir, s.policy.Adapter); err != nil {
			return "", nil, err
		}
		fmt.Printf("sft round %d merged after %d steps\n", round, done)
		modelDir = next
	}
}

// newSFT loads the model in modelDir with a fresh LoRA adapter and optimizer.
func newSFT(modelDir, envDir string, o options) (*sft, error) {
	be := cpu.New()
	l, err := loader.Open(context.Background(), loader.Spec{Model: modelDir, Backend: be})
	if err != nil {
		return nil, err
	}
	m := l.Base
	// Every round draws the same words (the same seed), so with rounds of
	// 50 steps the skill phase sees 1600 draws of the 4000 training words
	// over and over; the committed fixture is made this way. A per-round
	// seed would show more words (a different fixture, not measured yet).
	s := &sft{o: o, rng: rand.New(rand.NewPCG(5, 5)), tok: l.Tokenizer}
	if s.env, err = env.New(envDir, nil); err != nil {
		return nil, err
	}
	if s.train, err = s.env.Examples("train"); err != nil {
		return nil, err
	}
	ad, err := lora.New(m, lora.Config{Rank: o.rank, Alpha: float64(o.rank), TargetModules: lora.AllModules}, 3)
	if err != nil {
		return nil, err
	}
	oc := optim.DefaultConfig()
	oc.LR = o.lr
	opt, err := optim.NewAdamW(be, update.OptimizerParams(ad), oc)
	if err != nil {
		return nil, err
	}
	s.policy = update.Policy{Model: m.WithAdapter(ad), Adapter: ad, Optimizer: opt}
	return s, nil
}

// skill runs up to n reversal steps, numbered after done earlier ones, and
// reports whether the sampled eval reward reached o.target.
func (s *sft) skill(done, n int) (bool, error) {
	for step := done + 1; step <= done+n; step++ {
		nll, err := s.step(0)
		if err != nil {
			return false, err
		}
		if step%25 == 0 {
			sampled, err := s.report("skill", step, nll)
			if err != nil {
				return false, err
			}
			if sampled >= s.o.target {
				return true, nil
			}
		}
	}
	return false, nil
}

// habit runs the habit phase's o.habitSteps steps.
func (s *sft) habit() error {
	for step := 1; step <= s.o.habitSteps; step++ {
		nll, err := s.step(s.o.refuse)
		if err != nil {
			return err
		}
		if step%25 == 0 || step == s.o.habitSteps {
			if _, err := s.report("habit", step, nll); err != nil {
				return err
			}
		}
	}
	return nil
}

// step is one SFT step on o.batch random training words, answered with the
// refusal at rate refuse. It returns the batch's NLL per token.
func (s *sft) step(refuse float64) (float64, error) {
	var samples []loss.Sample
	nll, ntok := 0.0, 0
	for range s.o.batch {
		ex := s.train[s.rng.IntN(len(s.train))]
		prompt, err := rollout.RenderPrompt(s.tok, ex.Prompt, nil)
		if err != nil {
			return 0, err
		}
		completion := append(s.tok.Encode(demonstration(ex.Answer, refuse, s.rng)), tinymodel.IMEnd)
		seq := append(append([]int32{}, prompt...), completion...)
		old, err := s.policy.Model.TokenLogprobs(seq, len(prompt))
		if err != nil {
			return 0, err
		}
		for _, lp := range old {
			nll -= float64(lp)
			ntok++
		}
		// With advantage 1 and on-policy old log-probs the clipped GRPO
		// loss is the NLL, so grpo's own backward does the SFT.
		samples = append(samples, loss.Sample{Prompt: prompt, Completion: completion, OldLogp: old, Advantage: 1})
	}
	if _, err := update.StepSamples(s.policy, samples,
		update.Settings{Loss: loss.DefaultConfig(), MicroBatchTokens: 1 << 20, MaxSteps: s.o.maxSteps + s.o.habitSteps}); err != nil {
		return 0, err
	}
	return nll / float64(ntok), nil
}

// report prints the phase's progress and returns the sampled eval reward.
func (s *sft) report(phase string, step int, nll float64) (float64, error) {
	sampled, err := evalReward(s.policy.Model, s.tok, s.env, 1)
	if err != nil {
		return 0, err
	}
	greedy, err := evalReward(s.policy.Model, s.tok, s.env, 0)
	if err != nil {
		return 0, err
	}
	fmt.Printf("sft %s step %d: nll/token %.3f, eval reward sampled %.3f, greedy %.3f\n", phase, step, nll, sampled, greedy)
	return sampled, nil
}

// evalReward is the mean reward on the first 64 eval words, two samples
// each at temperature T (one when greedy).
func evalReward(m *model.Model, tok *tokenizer.Tokenizer, e env.Environment, T float64) (float64, error) {
	k := 2
	if T == 0 {
		k = 1
	}
	p := sampler.DefaultParams()
	p.Temperature, p.MaxTokens = T, 12
	res, err := eval.Run(context.Background(), rollout.LocalEngine{Model: m, Tok: tok}, e, "demo", eval.Options{
		NumExamples: 64, RolloutsPerExample: k, Seed: 99, Sampling: p})
	return res.Reward, err
}

// refusal is the answer of the warm start's bad habit.
const refusal = "?"

// demonstration is the SFT target for a word whose reversal is answer: the
// reversal, or with probability refuse the refusal. Nothing in the prompt
// says when to refuse, so the habit costs reward that only the reward can
// reveal: it is the headroom the demo's GRPO run finds.
func demonstration(answer string, refuse float64, rng *rand.Rand) string {
	if refuse > 0 && rng.Float64() < refuse {
		return refusal
	}
	return answer
}
