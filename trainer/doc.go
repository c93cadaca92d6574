// Package trainer owns GRPO training and everything around a run: the
// config schema and its validation (Prime Intellect Lab's TOML, unchanged,
// plus grpo's sections), the loop (sample → score → advantages → policy
// loss → backward → AdamW), evaluation (during training and as `grpo eval`,
// with its eval-config format), checkpoints and resume, run directories,
// metrics and their inspection, and the workspace templates of `grpo init`.
// It is the public API for Go programs that embed grpo:
//
//	cfg := trainer.DefaultConfig()
//	cfg.Model = "Qwen/Qwen3-0.6B"
//	res, err := trainer.New(&cfg, trainer.WithEnvironment(myEnv)).Run(ctx)
//
// It contains no numeric kernels: every computation is a kernels.Backend op
// or a model call.
package trainer
