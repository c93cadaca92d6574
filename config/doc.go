// Package config owns the run, eval and GEPA config schema: Prime Intellect
// Lab's TOML (configs/rl/*.toml and configs/eval/*.toml), unchanged, plus
// grpo's own sections; parsing, validation with one-line errors that point
// at the key's line and say the fix, did-you-mean for unknown keys, and
// the key reference of docs/config.md. It runs nothing: the trainer and
// the CLI act on what it returns.
//
//	cfg := config.DefaultConfig()
//	cfg.Model = "Qwen/Qwen3-0.6B"
//	res, err := trainer.New(&cfg, trainer.WithEnvironment(myEnv)).Run(ctx)
package config
