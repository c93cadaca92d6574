// Package optim owns the optimizer of the trainable parameters: its
// configuration (the [optimizer] section of a run config, which package
// config embeds), AdamW with decoupled weight decay, global gradient-norm
// clipping, the learning-rate schedule, and its state for checkpoints. It
// sits below the trainer so that the step-time estimate can time a real
// update without importing the loop.
package optim
