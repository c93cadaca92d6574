package config

import "slices"

// AddEnv returns the config with an [[env]] block for id of the given
// weight appended, unless a block already names id (then c itself): how
// environments a Go program hands the trainer join the mixture. c is not
// changed.
func (c *Config) AddEnv(id string, weight float64) *Config {
	if slices.ContainsFunc(c.Env, func(e Env) bool { return e.ID == id }) {
		return c
	}
	out := *c
	out.Env = append(slices.Clone(c.Env), Env{ID: id, Weight: weight})
	return &out
}
