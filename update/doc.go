// Package update owns one GRPO update of a LoRA policy: group-relative
// advantages of scored rollouts, the zero-advantage filter (groups whose
// rewards tie leave before the forward), the policy gradient over the
// remaining samples,
// one optimizer step, and gradients left at zero on every path, failed or
// not. It also hands an adapter's parameters to the optimizer. The trainer,
// the step-time estimate, `grpo bench --grpo-step` and the demo's
// generator all run this one update, so what the bench and the estimate
// time is what a run does. It sits beside rollout, above lora, loss and
// optim, and knows nothing of configs or the loop.
package update
