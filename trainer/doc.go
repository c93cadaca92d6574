// Package trainer owns GRPO training: the loop (sample → score →
// advantages → policy loss → backward → AdamW), periodic evaluation
// during training (played by package eval), checkpoints and resume. The
// config it runs is package config's; the run directory it writes is
// package rundir's. It is the public API for Go programs that embed grpo:
//
//	cfg := config.DefaultConfig()
//	cfg.Model = "Qwen/Qwen3-0.6B"
//	res, err := trainer.New(&cfg, trainer.WithEnvironment(myEnv)).Run(ctx)
//
// It contains no numeric kernels: every computation is a kernels.Backend op
// or a model call.
package trainer
