package config

import "fmt"

// AsyncLevel is max_async_level where it takes effect: how many optimiser
// steps older than the trainer's policy a rollout's may be. Only a run
// with [inference] generates ahead of the trainer (on the server, while
// the trainer trains); in this process generation and training share the
// device, so such a run stays on-policy and it is 0.
func (c *Config) AsyncLevel() int {
	if c.MaxAsyncLevel == nil || !c.Inference.On() {
		return 0
	}
	return *c.MaxAsyncLevel
}

// checkAsync adds max_async_level's problems to l.
func (c *Config) checkAsync(l *problems) {
	if c.MaxAsyncLevel == nil {
		return
	}
	switch k := *c.MaxAsyncLevel; {
	case k < 0:
		l.at(fmt.Sprintf("key \"max_async_level\": max_async_level = %d: want the steps a rollout's policy may lag the trainer's, ≥ 0 (0: every rollout from the current policy)", k), "max_async_level")
	case k > 0 && c.Inference.On() && c.Buffer.Active():
		l.at(fmt.Sprintf("key \"max_async_level\": max_async_level = %d with [buffer] is not supported yet (the difficulty pools decide a step's examples from the groups scored in it); set max_async_level = 0, or remove [buffer]", k), "max_async_level")
	}
}

// asyncWarning says what max_async_level does in this run, with prime lab
// doctor's deprecation (Lab's hosted trainer no longer reads it), so the
// file is fixed for both.
func (c *Config) asyncWarning() []warning {
	if c.MaxAsyncLevel == nil {
		return nil
	}
	k := *c.MaxAsyncLevel
	pos, _ := c.src.Locate("max_async_level")
	where := fmt.Sprintf("%s:%d", c.src.Name, pos.Line)
	doctor := keyInfos["max_async_level"].deprecated
	if k > 0 && c.Inference.On() {
		return []warning{{pos.Line, pos.Column, fmt.Sprintf("%s: deprecated (prime lab doctor: %s); used here: rollouts are generated on the [inference] server while the trainer trains, each by a policy at most max_async_level = %d optimiser step(s) behind the trainer's", where, doctor, k)}}
	}
	return []warning{{pos.Line, pos.Column, fmt.Sprintf("%s: deprecated (prime lab doctor: %s); accepted and ignored locally because only a run with [inference] generates rollouts ahead of the trainer; in this process each step samples with the current policy", where, doctor)}}
}
