// Package trainer owns GRPO training: the config schema and its validation,
// the loop (sample → score → advantages → policy loss → backward → AdamW),
// evaluation, checkpoints and resume, run directories and metrics. It is the
// public API for Go programs that embed grpo. It contains no numeric
// kernels: every computation is a kernels.Backend op or a model call.
package trainer
