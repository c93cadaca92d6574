package trainer

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// LossConfig is the [loss] section of a run config.
type LossConfig struct {
	// Type is the aggregation: "dapo" (token-level mean over the whole
	// batch's tokens), "grpo" (mean per sequence, then over sequences) or
	// "dr_grpo" (sum divided by batch size × max_tokens).
	Type string `toml:"loss_type"`
	// Epsilon and EpsilonHigh bound the PPO ratio clip to
	// [1−Epsilon, 1+EpsilonHigh]; EpsilonHigh defaults to Epsilon (DAPO's
	// clip-higher sets it larger).
	Epsilon     float64  `toml:"epsilon"`
	EpsilonHigh *float64 `toml:"epsilon_high"`
	// Beta weighs the k3 KL penalty to the base model (adapter off).
	Beta float64 `toml:"beta"`
	// ScaleRewards divides advantages by the std of their "group"
	// (default), the whole "batch", or nothing ("none").
	ScaleRewards string `toml:"scale_rewards"`
	// MaskTruncated drops completions cut off by max_tokens from the loss.
	MaskTruncated bool `toml:"mask_truncated"`
}

// DefaultLoss is the [loss] section when a config leaves it out.
func DefaultLoss() LossConfig {
	return LossConfig{Type: "dapo", Epsilon: 0.2, ScaleRewards: "group"}
}

// epsHigh resolves EpsilonHigh's default.
func (c LossConfig) epsHigh() float64 {
	if c.EpsilonHigh != nil {
		return *c.EpsilonHigh
	}
	return c.Epsilon
}

// Validate reports the first invalid setting as "[loss] key: problem".
func (c LossConfig) Validate() error {
	switch c.Type {
	case "dapo", "grpo", "dr_grpo":
	default:
		return fmt.Errorf("[loss] loss_type = %q: want \"dapo\", \"grpo\" or \"dr_grpo\"", c.Type)
	}
	if !(c.Epsilon >= 0 && c.Epsilon < 1) {
		return fmt.Errorf("[loss] epsilon = %v: want a value in [0, 1), e.g. 0.2", c.Epsilon)
	}
	if e := c.epsHigh(); !(e >= 0) || math.IsInf(e, 0) {
		return fmt.Errorf("[loss] epsilon_high = %v: want a value ≥ 0, e.g. 0.28", e)
	}
	if !(c.Beta >= 0) || math.IsInf(c.Beta, 0) {
		return fmt.Errorf("[loss] beta = %v: want a value ≥ 0 (0 disables the KL penalty)", c.Beta)
	}
	if _, err := c.advantageScale(); err != nil {
		return err
	}
	return nil
}

func (c LossConfig) advantageScale() (kernels.AdvantageScale, error) {
	switch c.ScaleRewards {
	case "group", "":
		return kernels.ScaleGroup, nil
	case "batch":
		return kernels.ScaleBatch, nil
	case "none":
		return kernels.ScaleNone, nil
	}
	return 0, fmt.Errorf("[loss] scale_rewards = %q: want \"group\", \"batch\" or \"none\"", c.ScaleRewards)
}

// Sample is one rollout ready for the policy update.
type Sample struct {
	Prompt     []int32
	Completion []int32 // every token after the prompt, model's and environment's
	// ModelMask marks the completion tokens the model generated (true) as
	// opposed to environment replies in multi-turn rollouts; nil means all.
	ModelMask []bool
	// OldLogp is the behaviour policy's log-prob of each completion token
	// (the sampler's), len(Completion); ignored where ModelMask is false.
	OldLogp   []float32
	Advantage float32
	Truncated bool // stopped by max_tokens rather than a stop token
}

func (s *Sample) trained(j int, cfg LossConfig) bool {
	if cfg.MaskTruncated && s.Truncated {
		return false
	}
	return s.ModelMask == nil || s.ModelMask[j]
}

// LossStats are the policy update's metrics, averaged over trained tokens.
// KL is measured only when the penalty is on (Beta > 0): it needs a second
// forward pass through the base model.
type LossStats struct {
	Loss                          float64
	Tokens                        int // trained (unmasked) completion tokens
	Entropy, KL                   float64
	ClipLow, ClipHigh, ClipRegion float64 // fractions of trained tokens
}

// tokenWeights returns, per sample and completion token, the weight of its
// loss term: the mask times the aggregation's normalisation, so that the
// weighted sum over all tokens is the batch loss.
func tokenWeights(samples []Sample, cfg LossConfig, maxTokens int) ([][]float32, int) {
	w := make([][]float32, len(samples))
	total := 0
	for i := range samples {
		w[i] = make([]float32, len(samples[i].Completion))
		for j := range w[i] {
			if samples[i].trained(j, cfg) {
				w[i][j] = 1
				total++
			}
		}
	}
	for i := range w {
		var norm float64
		switch cfg.Type {
		case "dapo":
			norm = float64(total)
		case "grpo":
			n := 0
			for _, v := range w[i] {
				n += int(v)
			}
			norm = float64(n) * float64(len(samples))
		case "dr_grpo":
			norm = float64(len(samples)) * float64(maxTokens)
		}
		for j := range w[i] {
			if w[i][j] != 0 {
				w[i][j] = float32(1 / norm)
			}
		}
	}
	return w, total
}

// PolicyGradient computes the GRPO policy loss of samples under policy (a
// model with its LoRA adapter attached) and adds the gradient of the loss
// into the adapter's gradient buffers. Samples are processed in
// micro-batches of at most microTokens tokens; the per-token weights are
// computed over the whole batch first, so the accumulated gradient equals
// that of one big batch. maxTokens is [sampling] max_tokens (dr_grpo's
// normaliser). With cfg.Beta > 0 the KL reference is policy with its
// adapter switched off.
func PolicyGradient(policy *model.Model, samples []Sample, cfg LossConfig, maxTokens, microTokens int) (LossStats, error) {
	var st LossStats
	for i, s := range samples {
		if len(s.Prompt) == 0 || len(s.Completion) == 0 {
			return st, fmt.Errorf("sample %d: empty prompt or completion", i)
		}
		if len(s.OldLogp) != len(s.Completion) || (s.ModelMask != nil && len(s.ModelMask) != len(s.Completion)) {
			return st, fmt.Errorf("sample %d: %d completion tokens but %d old log-probs and %d mask entries", i, len(s.Completion), len(s.OldLogp), len(s.ModelMask))
		}
	}
	weights, total := tokenWeights(samples, cfg, maxTokens)
	st.Tokens = total
	if total == 0 {
		return st, nil
	}
	var sums lossSums
	for lo := 0; lo < len(samples); {
		hi, n := lo, 0
		for hi < len(samples) && (hi == lo || n+seqLen(&samples[hi]) <= microTokens) {
			n += seqLen(&samples[hi])
			hi++
		}
		if err := policyMicroBatch(policy, samples[lo:hi], weights[lo:hi], cfg, &sums); err != nil {
			return st, err
		}
		lo = hi
	}
	st.Loss = sums.loss
	t := float64(total)
	st.Entropy, st.KL = sums.entropy/t, sums.kl/t
	st.ClipLow, st.ClipHigh = float64(sums.clipLow)/t, float64(sums.clipHigh)/t
	st.ClipRegion = float64(sums.clipLow+sums.clipHigh) / t
	return st, nil
}

// seqLen is the number of tokens a sample puts through the forward pass:
// every token but the last, which is only a target.
func seqLen(s *Sample) int { return len(s.Prompt) + len(s.Completion) - 1 }

type lossSums struct {
	loss, entropy, kl float64
	clipLow, clipHigh int
}

func policyMicroBatch(policy *model.Model, samples []Sample, weights [][]float32, cfg LossConfig, sums *lossSums) error {
	be := policy.Backend
	var b model.Batch
	var targets []int32
	var old, adv, w []float32
	for i := range samples {
		s := &samples[i]
		seq := append(append([]int32{}, s.Prompt...), s.Completion...)
		b.Add(i, 0, seq[:len(seq)-1]...)
		targets = append(targets, seq[1:]...)
		// Rows before the last prompt token predict prompt tokens: weight 0.
		for range len(s.Prompt) - 1 {
			old, adv, w = append(old, 0), append(adv, 0), append(w, 0)
		}
		old = append(old, s.OldLogp...)
		w = append(w, weights[i]...)
		for range s.Completion {
			adv = append(adv, s.Advantage)
		}
	}
	n := b.Len()
	tr, err := policy.ForwardTrain(&b, targets)
	if err != nil {
		return err
	}
	defer tr.Free()
	var ref []float32
	var refBuf kernels.Buffer
	if cfg.Beta != 0 {
		rt, err := policy.WithAdapter(nil).ForwardTrain(&b, targets)
		if err != nil {
			return err
		}
		ref = make([]float32, n)
		be.Download(ref, rt.Logp)
		rt.Free()
		refBuf = be.Alloc(kernels.F32, n)
		defer be.Free(refBuf)
		be.Upload(refBuf, ref)
	}
	upload := func(v []float32) kernels.Buffer {
		buf := be.Alloc(kernels.F32, len(v))
		be.Upload(buf, v)
		return buf
	}
	oldBuf, advBuf, wBuf := upload(old), upload(adv), upload(w)
	lossBuf, dlogp := be.Alloc(kernels.F32, n), be.Alloc(kernels.F32, n)
	defer func() {
		for _, x := range []kernels.Buffer{oldBuf, advBuf, wBuf, lossBuf, dlogp} {
			be.Free(x)
		}
	}()
	be.PolicyLoss(lossBuf, dlogp, tr.Logp, oldBuf, refBuf, advBuf, wBuf, n, kernels.PolicyLossParams{
		EpsLow: float32(cfg.Epsilon), EpsHigh: float32(cfg.epsHigh()), Beta: float32(cfg.Beta)})
	if err := tr.Backward(dlogp); err != nil {
		return err
	}

	logp, ent, loss := make([]float32, n), make([]float32, n), make([]float32, n)
	be.Download(logp, tr.Logp)
	be.Download(ent, tr.Entropy)
	be.Download(loss, lossBuf)
	if err := be.Sync(); err != nil {
		return err
	}
	lo, hi := 1-cfg.Epsilon, 1+cfg.epsHigh()
	for t := range n {
		if math.IsNaN(float64(logp[t])) || math.IsInf(float64(logp[t]), 0) {
			return fmt.Errorf("non-finite log-probability %v at token %d of the batch: the model's logits overflowed or hold NaN", logp[t], t)
		}
		if w[t] == 0 {
			continue
		}
		sums.loss += float64(loss[t])
		sums.entropy += float64(ent[t])
		if ref != nil {
			d := float64(ref[t] - logp[t])
			sums.kl += math.Exp(d) - d - 1
		}
		ratio := math.Exp(float64(logp[t] - old[t]))
		switch {
		case ratio < lo && adv[t] < 0:
			sums.clipLow++
		case ratio > hi && adv[t] > 0:
			sums.clipHigh++
		}
	}
	return nil
}
