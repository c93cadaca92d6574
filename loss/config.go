package loss

import (
	"fmt"
	"math"
)

// Config is the [loss] section of a run config.
type Config struct {
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
	// RoutingReplay makes the training forward of a mixture-of-experts
	// model route each token to the experts it was routed to when it was
	// sampled (Sample.Experts), so the trained and the behaviour policy
	// take the same experts even where a near-tie would flip.
	RoutingReplay bool `toml:"routing_replay"`
}

// DefaultConfig is the [loss] section when a config leaves it out.
func DefaultConfig() Config {
	return Config{Type: "dapo", Epsilon: 0.2, ScaleRewards: "group", RoutingReplay: true}
}

// epsHigh resolves EpsilonHigh's default.
func (c Config) epsHigh() float64 {
	if c.EpsilonHigh != nil {
		return *c.EpsilonHigh
	}
	return c.Epsilon
}

// Validate reports the first invalid setting as "[loss] key: problem".
func (c Config) Validate() error {
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
	if _, err := c.AdvantageScale(); err != nil {
		return err
	}
	return nil
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
