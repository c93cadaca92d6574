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

// checkAsync adds max_async_level's problems to l (max_off_policy_steps
// is the same setting by then).
func (c *Config) checkAsync(l *problems) {
	if c.MaxAsyncLevel == nil {
		return
	}
	switch k := *c.MaxAsyncLevel; {
	case k < 0:
		l.at(fmt.Sprintf("key \"max_async_level\": max_async_level = %d: want the steps a rollout's policy may lag the trainer's, ≥ 0 (0: every rollout from the current policy)", k), "max_async_level")
	}
}

// resolveOffPolicy makes max_off_policy_steps (prime-rl's name: the most
// policy steps a trained-on rollout may lag) the same setting as
// max_async_level, which bounds exactly that here.
func (c *Config) resolveOffPolicy(l *problems) {
	o := c.MaxOffPolicySteps
	if o == nil {
		return
	}
	if a := c.MaxAsyncLevel; a != nil && *a != *o {
		l.at(fmt.Sprintf("key \"max_off_policy_steps\": max_off_policy_steps = %d conflicts with max_async_level = %d; they are one setting (prime-rl's name and the Lab's): keep one of them", *o, *a), "max_off_policy_steps")
		return
	}
	c.MaxAsyncLevel = o
}

// asyncWarning says, at each key that set it, what max_async_level (or
// max_off_policy_steps) does in this run, with prime lab doctor's
// deprecation (Lab's hosted trainer no longer reads them), so the file is
// fixed for both.
func (c *Config) asyncWarning() []warning {
	if c.MaxAsyncLevel == nil {
		return nil
	}
	k := *c.MaxAsyncLevel
	var out []warning
	for _, key := range []string{"max_async_level", "max_off_policy_steps"} {
		pos, ok := c.src.Locate(key)
		if !ok {
			continue
		}
		where := fmt.Sprintf("%s:%d", c.src.Name, pos.Line)
		doctor := keyInfos[key].deprecated
		msg := fmt.Sprintf("%s: deprecated (prime lab doctor: %s); accepted and ignored locally because only a run with [inference] generates rollouts ahead of the trainer; in this process each step samples with the current policy", where, doctor)
		if k > 0 && c.Inference.On() {
			msg = fmt.Sprintf("%s: deprecated (prime lab doctor: %s); used here: rollouts are generated on the [inference] server while the trainer trains, each by a policy at most %s = %d optimiser step(s) behind the trainer's", where, doctor, key, k)
		}
		out = append(out, warning{pos.Line, pos.Column, msg})
	}
	return out
}
