package update

import (
	"fmt"
	"time"

	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/optim"
)

// Policy is what an update trains: Model is the base with Adapter
// attached, and Optimizer holds OptimizerParams(Adapter).
type Policy struct {
	Model     *model.Model
	Adapter   *lora.Adapter
	Optimizer *optim.AdamW
}

// Settings are the numbers of a run that shape its updates.
type Settings struct {
	Loss             loss.Config
	MaxTokens        int // [sampling] max_tokens: dr_grpo's normaliser
	MicroBatchTokens int // tokens per forward/backward pass
	MaxSteps         int // the length of the learning-rate schedule
}

// Scored is one rollout with its reward. Sample.Advantage is not read:
// Step sets it from the rewards of the rollout's group.
type Scored struct {
	Sample loss.Sample
	Reward float32
	// Others are the rollout's other samples: an agent program's episode
	// whose program rewrote its conversation's history is several token
	// sequences (rollout.Trajectory.Rewritten). Each trains with the
	// rollout's advantage, as prime-rl trains every sample of a rollout;
	// the group's advantages still count the rollout once.
	Others []loss.Sample
}

// Stats report one update.
type Stats struct {
	Advantages loss.AdvantageStats // zero from StepSamples
	Loss       loss.Stats
	Optimizer  optim.StepStats
	// The wall time of the policy gradient and of the optimizer step,
	// apart because the step-time estimate scales the first with the
	// tokens of a step and not the second.
	PolicyGradientTime, OptimizerTime time.Duration
	// Skipped reports a step with no token to train (every rollout
	// failed, or every group's rewards were equal and filtered): no
	// optimizer update was taken, since AdamW's momentum would move the
	// adapter on zero gradients.
	Skipped bool
}

// Step is one GRPO update from rollouts in consecutive groups of
// groupSize: group-relative advantages of their rewards (scaled as
// s.Loss says), then StepSamples over every rollout that has a prompt and
// a completion. A failed episode with nothing generated still counts in
// its group's advantages but carries no gradient; a rollout's Others
// train with its advantage. With
// s.Loss.FilterZeroAdvantages the groups whose rewards are all equal
// (every advantage exactly 0) are left out before the forward, so the
// update is that of the other groups alone, normaliser included.
func Step(p Policy, rollouts []Scored, groupSize int, s Settings) (Stats, error) {
	b, err := Prepare(rollouts, groupSize, s)
	if err != nil {
		return Stats{}, err
	}
	st, err := StepSamples(p, b.Samples, s)
	b.Into(&st)
	return st, err
}

// Batch is a step's samples with their advantages set, as Step trains
// them.
type Batch struct {
	Samples []loss.Sample
	// Group is each sample's group, the index of its first rollout over
	// groupSize, so that a data-parallel step keeps a group on one device.
	Group []int
	// Advantages and the filter's counts, for the step's Stats.
	Advantages                      loss.AdvantageStats
	FilteredGroups, FilteredSamples int
}

// Into sets the parts of st that b holds.
func (b Batch) Into(st *Stats) {
	st.Advantages = b.Advantages
	st.Loss.FilteredGroups, st.Loss.FilteredSamples = b.FilteredGroups, b.FilteredSamples
}

// Prepare is Step up to the policy gradient: the group-relative
// advantages and the samples they weigh.
func Prepare(rollouts []Scored, groupSize int, s Settings) (Batch, error) {
	scale, err := s.Loss.AdvantageScale()
	if err != nil || len(rollouts) == 0 {
		// No rollouts: every group of the step was dropped before the
		// update (online difficulty filtering found none to train on), a
		// skipped step like one whose groups all have equal rewards.
		return Batch{}, err
	}
	rewards := make([]float32, len(rollouts))
	for i := range rollouts {
		rewards[i] = rollouts[i].Reward
	}
	adv, advStats, err := loss.Advantages(rewards, groupSize, scale)
	if err != nil {
		return Batch{}, err
	}
	b := Batch{Samples: make([]loss.Sample, 0, len(rollouts)), Advantages: advStats}
	for g := 0; g < len(rollouts); g += groupSize {
		if s.Loss.FilterZeroAdvantages && equalRewards(rewards[g:g+groupSize]) {
			b.FilteredGroups++
			b.FilteredSamples += groupSize
			continue
		}
		for i := g; i < g+groupSize; i++ {
			for j := -1; j < len(rollouts[i].Others); j++ {
				smp := rollouts[i].Sample
				if j >= 0 {
					smp = rollouts[i].Others[j]
				}
				if len(smp.Prompt) == 0 || len(smp.Completion) == 0 {
					continue
				}
				smp.Advantage = adv[i]
				b.Samples = append(b.Samples, smp)
				b.Group = append(b.Group, g/groupSize)
			}
		}
	}
	return b, nil
}

// equalRewards reports whether a group's rewards are all the same: its
// advantages are then exactly 0 (loss.Advantages), under every scale.
func equalRewards(rs []float32) bool {
	for _, r := range rs {
		if r != rs[0] {
			return false
		}
	}
	return true
}

// StepSamples is the update for samples whose advantages are already
// set: the policy gradient into the adapter's gradients, then one
// optimizer step, which zeroes them. When either fails the gradients are
// zeroed here instead, so a failed update leaves nothing half-accumulated
// for the next one; a failed optimizer step changes no parameter.
func StepSamples(p Policy, samples []loss.Sample, s Settings) (Stats, error) {
	var st Stats
	var err error
	t0 := time.Now()
	st.Loss, err = loss.PolicyGradient(p.Model, samples, s.Loss, s.MaxTokens, s.MicroBatchTokens)
	st.PolicyGradientTime = time.Since(t0)
	if err != nil {
		p.Adapter.ZeroGrad()
		return st, fmt.Errorf("policy loss: %w", err)
	}
	if st.Loss.Tokens == 0 {
		st.Skipped = true
		st.Optimizer = optim.StepStats{LR: p.Optimizer.NextLR(s.MaxSteps)}
		p.Adapter.ZeroGrad()
		return st, nil
	}
	t0 = time.Now()
	st.Optimizer, err = p.Optimizer.Update(s.MaxSteps)
	st.OptimizerTime = time.Since(t0)
	if err != nil {
		p.Adapter.ZeroGrad()
		return st, err
	}
	return st, nil
}
