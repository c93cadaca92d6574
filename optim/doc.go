// Package optim owns the optimizer of the trainable parameters: AdamW with
// decoupled weight decay, global gradient-norm clipping and the
// learning-rate schedule of config.Optimizer, and its state for
// checkpoints. It sits below the trainer so that the step-time estimate
// can time a real update without importing the loop.
package optim
