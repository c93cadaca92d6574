package curriculum

import (
	"fmt"
	"math"
)

// Config is the [buffer] section of a run config: Lab's (deprecated
// there, still written by older `prime lab setup`s) and prime-rl's
// orchestrator buffer, with their key names, so such a config means the
// same here.
type Config struct {
	// OnlineDifficultyFiltering drops from training the groups whose mean
	// reward is exactly 0 (every rollout failed) or 1 (every rollout
	// succeeded), and refills the batch with fresh groups.
	OnlineDifficultyFiltering bool `toml:"online_difficulty_filtering"`
	// EasyThreshold and HardThreshold move an example whose group's mean
	// reward is ≥ EasyThreshold into the easy pool and ≤ HardThreshold into
	// the hard pool; pooled examples are no longer drawn. Unset: no pool.
	EasyThreshold *float64 `toml:"easy_threshold"`
	HardThreshold *float64 `toml:"hard_threshold"`
	// EasyFraction and HardFraction of the pools go back to the examples
	// drawn when a run resumes (prime-rl's meaning), so a resumed run can
	// revisit what it had set aside.
	EasyFraction float64 `toml:"easy_fraction"`
	HardFraction float64 `toml:"hard_fraction"`
	// EnvRatios are the environments' shares of each batch, one per [[env]]
	// in order: Lab's spelling of [[env]] weight.
	EnvRatios []float64 `toml:"env_ratios"`
	// Seed seeds which pooled examples return at a resume; unset: the
	// run's seed.
	Seed *int64 `toml:"seed"`
}

// Pools reports whether difficulty pools are on (a threshold is set).
func (c Config) Pools() bool { return c.EasyThreshold != nil || c.HardThreshold != nil }

// Active reports whether the buffer changes what a step trains on.
func (c Config) Active() bool { return c.Pools() || c.OnlineDifficultyFiltering }

// Problems lists the settings that cannot work, each naming its key.
func (c Config) Problems() []error {
	var ps []error
	bad := func(format string, args ...any) { ps = append(ps, fmt.Errorf(format, args...)) }
	for _, t := range []struct {
		key string
		v   *float64
	}{{"easy_threshold", c.EasyThreshold}, {"hard_threshold", c.HardThreshold}} {
		if t.v != nil && (math.IsNaN(*t.v) || math.IsInf(*t.v, 0)) {
			bad("[buffer] %s = %v: want a finite mean reward, e.g. 0.9 (easy) or 0.1 (hard)", t.key, *t.v)
		}
	}
	if e, h := c.EasyThreshold, c.HardThreshold; e != nil && h != nil && !(*e > *h) {
		bad("[buffer] easy_threshold = %v is not above hard_threshold = %v: a group's mean reward would be both easy and hard; raise easy_threshold or lower hard_threshold", *e, *h)
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"easy_fraction", c.EasyFraction}, {"hard_fraction", c.HardFraction}} {
		if !(f.v >= 0 && f.v <= 1) {
			bad("[buffer] %s = %v: want a fraction in [0, 1] of the pool that returns at a resume", f.key, f.v)
		}
	}
	sum := 0.0
	for i, r := range c.EnvRatios {
		if !(r >= 0) || math.IsInf(r, 0) {
			bad("[buffer] env_ratios[%d] = %v: want a finite share ≥ 0", i, r)
		}
		sum += r
	}
	if len(c.EnvRatios) > 0 && !(sum > 0) {
		bad("[buffer] env_ratios sum to %v: give at least one environment a positive share", sum)
	}
	return ps
}

// PlayLimit is the most groups a step may play to gather want groups to
// train on: want itself, or under online difficulty filtering
// oversampling (Lab's oversampling_factor; nil: 2) times it, so the
// groups it drops can be replaced.
func (c Config) PlayLimit(want int, oversampling *float64) int {
	if !c.OnlineDifficultyFiltering {
		return want
	}
	f := 2.0
	if oversampling != nil {
		f = *oversampling
	}
	return max(want, int(f*float64(want)))
}
