package loss

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// Config is the [loss] section of a run config. Key names follow TRL's
// GRPOConfig (loss_type, epsilon, epsilon_high, beta, scale_rewards,
// importance_sampling_level) and prime-rl (its default loss's
// dppo_mask_low/high, adv_tau, kl_tau; filter_zero_advantages), so a
// config written for either reads the same here.
type Config struct {
	// Type is the objective and its aggregation: "dapo" (PPO clip,
	// token-level mean over the whole batch's tokens), "grpo" (mean per
	// sequence, then over sequences), "dr_grpo" (sum divided by batch
	// size × max_tokens), "cispo" (clipped IS-weight policy gradient,
	// token mean) or "dppo" (prime-rl's default loss, token mean).
	Type string `toml:"loss_type"`
	// Epsilon and EpsilonHigh bound the PPO ratio clip to
	// [1−Epsilon, 1+EpsilonHigh]; EpsilonHigh defaults to Epsilon (DAPO's
	// clip-higher sets it larger). Under cispo EpsilonHigh is the cap on
	// the importance weight itself (TRL's and ScaleRL's ε_max).
	Epsilon     float64  `toml:"epsilon"`
	EpsilonHigh *float64 `toml:"epsilon_high"`
	// ImportanceSamplingLevel is "token" (PPO's per-token ratio) or
	// "sequence" (GSPO: one ratio per sequence, the geometric mean of its
	// tokens' ratios).
	ImportanceSamplingLevel string `toml:"importance_sampling_level"`
	// Beta weighs the k3 KL penalty to the base model (adapter off).
	Beta float64 `toml:"beta"`
	// DPPO (loss_type "dppo"): tokens whose probability rose by more than
	// DPPOMaskHigh (positive advantage) or fell by more than DPPOMaskLow
	// (otherwise) against the sampler's are dropped from the policy
	// term; AdvTau scales the advantage and KLTau the squared log-ratio
	// to the sampler.
	DPPOMaskLow  float64 `toml:"dppo_mask_low"`
	DPPOMaskHigh float64 `toml:"dppo_mask_high"`
	AdvTau       float64 `toml:"adv_tau"`
	KLTau        float64 `toml:"kl_tau"`
	// ISCorrection corrects for the sampler/trainer mismatch with the
	// weight exp(trainer − sampler log-probs), per token or per sequence,
	// truncated to or masked outside [ISClipMin, ISClipMax]: "none",
	// "token_truncate", "token_mask", "sequence_truncate" or
	// "sequence_mask". With it on, the ratio of the trust region is
	// taken against the trainer's own log-probs (π_old), as TRL does.
	ISCorrection string  `toml:"importance_sampling_correction"`
	ISClipMin    float64 `toml:"importance_sampling_clip_min"`
	ISClipMax    float64 `toml:"importance_sampling_clip_max"`
	// ScaleRewards divides advantages by the std of their "group"
	// (default), the whole "batch", or nothing ("none").
	ScaleRewards string `toml:"scale_rewards"`
	// FilterZeroAdvantages drops the groups whose rewards are all equal
	// before the training forward: their advantages are all 0, so they
	// would spend compute on no policy gradient and only dilute the
	// token mean (their KL term, with Beta > 0, leaves with them, as
	// prime-rl's filter takes the mismatch-KL term along).
	FilterZeroAdvantages bool `toml:"filter_zero_advantages"`
	// MaskTruncated drops completions cut off by max_tokens from the loss.
	MaskTruncated bool `toml:"mask_truncated"`
	// RoutingReplay makes the training forward of a mixture-of-experts
	// model route each token to the experts it was routed to when it was
	// sampled (Sample.Experts), so the trained and the behaviour policy
	// take the same experts even where a near-tie would flip.
	RoutingReplay bool `toml:"routing_replay"`
}

// DefaultConfig is the [loss] section when a config leaves it out; the
// DPPO and correction numbers are prime-rl's and TRL's defaults.
func DefaultConfig() Config {
	return Config{Type: "dapo", Epsilon: 0.2, ImportanceSamplingLevel: "token", ScaleRewards: "group",
		DPPOMaskLow: 0.2, DPPOMaskHigh: 0.2, AdvTau: 1, KLTau: 1e-3,
		ISCorrection: "none", ISClipMax: 3, FilterZeroAdvantages: true, RoutingReplay: true}
}

// epsHigh resolves EpsilonHigh's default.
func (c Config) epsHigh() float64 {
	if c.EpsilonHigh != nil {
		return *c.EpsilonHigh
	}
	return c.Epsilon
}

var isModes = map[string]kernels.ISCorrection{
	"none": kernels.ISNone, "": kernels.ISNone,
	"token_truncate": kernels.ISTokenTruncate, "token_mask": kernels.ISTokenMask,
	"sequence_truncate": kernels.ISSequenceTruncate, "sequence_mask": kernels.ISSequenceMask,
}

// Validate reports the first invalid setting as "[loss] key: problem".
func (c Config) Validate() error {
	if ps := c.Problems(); len(ps) > 0 {
		return ps[0]
	}
	return nil
}

// Problems lists every invalid setting, one "[loss] key = value: fix"
// error each.
func (c Config) Problems() []error {
	var ps []error
	bad := func(format string, args ...any) { ps = append(ps, fmt.Errorf(format, args...)) }
	finite := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
	switch c.Type {
	case "dapo", "grpo", "dr_grpo", "cispo", "dppo":
	default:
		bad(`[loss] loss_type = %q: want "dapo", "grpo", "dr_grpo", "cispo" or "dppo"`, c.Type)
	}
	if !(c.Epsilon >= 0 && c.Epsilon < 1) {
		bad("[loss] epsilon = %v: want a value in [0, 1), e.g. 0.2", c.Epsilon)
	}
	if e := c.epsHigh(); c.Type == "cispo" && !(e >= 1 && !math.IsInf(e, 0)) {
		bad("[loss] epsilon_high = %v: loss_type = \"cispo\" caps the importance weight at epsilon_high itself; set it ≥ 1, e.g. 5.0 (TRL's recommendation)", e)
	} else if !finite(e) {
		bad("[loss] epsilon_high = %v: want a value ≥ 0, e.g. 0.28", e)
	}
	switch c.ImportanceSamplingLevel {
	case "token", "":
	case "sequence":
		if c.Type == "cispo" || c.Type == "dppo" {
			bad(`[loss] importance_sampling_level = "sequence": GSPO's sequence ratio applies to the PPO-clip loss types; set loss_type to "dapo", "grpo" or "dr_grpo", or importance_sampling_level = "token"`)
		}
	default:
		bad(`[loss] importance_sampling_level = %q: want "token" or "sequence" (GSPO)`, c.ImportanceSamplingLevel)
	}
	if !finite(c.Beta) {
		bad("[loss] beta = %v: want a value ≥ 0 (0 disables the KL penalty)", c.Beta)
	}
	for _, k := range []struct {
		key string
		v   float64
	}{{"dppo_mask_low", c.DPPOMaskLow}, {"dppo_mask_high", c.DPPOMaskHigh}, {"adv_tau", c.AdvTau}, {"kl_tau", c.KLTau}} {
		if !finite(k.v) {
			bad("[loss] %s = %v: want a value ≥ 0 (prime-rl's defaults: dppo_mask_low = dppo_mask_high = 0.2, adv_tau = 1, kl_tau = 0.001)", k.key, k.v)
		}
	}
	mode, ok := isModes[c.ISCorrection]
	switch {
	case !ok:
		bad(`[loss] importance_sampling_correction = %q: want "none", "token_truncate", "token_mask", "sequence_truncate" or "sequence_mask"`, c.ISCorrection)
	case mode != kernels.ISNone && c.Type == "dppo":
		bad(`[loss] importance_sampling_correction = %q: loss_type = "dppo" masks against the sampler's log-probs itself; set importance_sampling_correction = "none"`, c.ISCorrection)
	}
	if mode != kernels.ISNone && !(c.ISClipMax > 0) {
		bad("[loss] importance_sampling_clip_max = %v: want a value > 0, e.g. 3 (TRL's default; inf leaves it open)", c.ISClipMax)
	}
	if mode != kernels.ISNone && !(c.ISClipMin >= 0 && c.ISClipMin < c.ISClipMax) {
		bad("[loss] importance_sampling_clip_min = %v: want a value ≥ 0 and below importance_sampling_clip_max = %v (0 leaves it open)", c.ISClipMin, c.ISClipMax)
	}
	if _, err := c.AdvantageScale(); err != nil {
		ps = append(ps, err)
	}
	return ps
}

// kernelParams are the PolicyLoss parameters of a valid config.
func (c Config) kernelParams() kernels.PolicyLossParams {
	p := kernels.PolicyLossParams{EpsLow: float32(c.Epsilon), EpsHigh: float32(c.epsHigh()), Beta: float32(c.Beta),
		MaskLow: float32(c.DPPOMaskLow), MaskHigh: float32(c.DPPOMaskHigh), AdvTau: float32(c.AdvTau), KLTau: float32(c.KLTau),
		IS: isModes[c.ISCorrection], ISMin: float32(c.ISClipMin), ISMax: float32(c.ISClipMax)}
	switch {
	case c.Type == "cispo":
		p.Objective = kernels.ObjectiveCISPO
	case c.Type == "dppo":
		p.Objective = kernels.ObjectiveDPPO
	case c.ImportanceSamplingLevel == "sequence":
		p.Objective = kernels.ObjectiveGSPO
	}
	return p
}

// AdvantageScale is scale_rewards as the divisor Advantages applies.
func (c Config) AdvantageScale() (AdvantageScale, error) {
	switch c.ScaleRewards {
	case "group", "":
		return ScaleGroup, nil
	case "batch":
		return ScaleBatch, nil
	case "none":
		return ScaleNone, nil
	}
	return 0, fmt.Errorf("[loss] scale_rewards = %q: want \"group\", \"batch\" or \"none\"", c.ScaleRewards)
}
