package config

import (
	"fmt"
)

// resolveBuffer applies [buffer] env_ratios (Lab's per-environment shares,
// in [[env]] order) as the envs' weights, and says what becomes of
// oversampling_factor, which only online difficulty filtering uses here.
func (c *Config) resolveBuffer(l *problems) []warning {
	if r := c.Buffer.EnvRatios; len(r) > 0 {
		if len(r) != len(c.Env) {
			l.at(fmt.Sprintf("key \"buffer.env_ratios\": [buffer] env_ratios has %d shares for %d [[env]] blocks; give one per environment, in order (or set [[env]] weight instead)", len(r), len(c.Env)), "buffer.env_ratios", "buffer")
		} else {
			for i := range c.Env {
				if c.src.Has(fmt.Sprintf("env.%d.weight", i)) && c.Env[i].Weight != r[i] {
					l.at(fmt.Sprintf("key \"buffer.env_ratios\": [buffer] env_ratios[%d] = %v conflicts with weight = %v of [[env]] %q; keep one of them", i, r[i], c.Env[i].Weight, c.Env[i].ID), "buffer.env_ratios", "buffer")
					continue
				}
				c.Env[i].Weight = r[i]
			}
		}
	}
	if c.OversamplingFactor == nil {
		return nil
	}
	pos, _ := c.src.Locate("oversampling_factor")
	where := fmt.Sprintf("%s:%d", c.src.Name, pos.Line)
	doctor := keyInfos["oversampling_factor"].deprecated
	if !c.Buffer.OnlineDifficultyFiltering {
		return []warning{{pos.Line, pos.Column, fmt.Sprintf("%s: deprecated (prime lab doctor: %s); accepted and ignored locally because without [buffer] online_difficulty_filtering no group is dropped, so a step generates exactly batch_size rollouts", where, doctor)}}
	}
	if f := *c.OversamplingFactor; !(f >= 1) || f > 64 {
		l.at(fmt.Sprintf("key \"oversampling_factor\": oversampling_factor = %v: want a bound in [1, 64] on the rollouts a step generates, as a multiple of batch_size (1: never refill dropped groups)", f), "oversampling_factor")
	}
	return []warning{{pos.Line, pos.Column, fmt.Sprintf("%s: deprecated (prime lab doctor: %s); used here: a step refills the groups online difficulty filtering drops, generating at most oversampling_factor × batch_size rollouts", where, doctor)}}
}
