// Package loss owns the GRPO loss family: group-relative advantages of a
// step's rewards, the samples the policy update trains on, and the policy
// loss — PPO clip with dapo, grpo or dr_grpo aggregation, GSPO's sequence
// ratio, CISPO, prime-rl's DPPO+KL; a truncated or masked correction
// against the sampler's log-probs; the k3 KL penalty to the adapter-off
// model — whose gradient it adds into a LoRA adapter, micro-batch by
// micro-batch. It depends on model and kernels only, so the trainer, the
// CUDA full-model check and examples share one implementation.
package loss
