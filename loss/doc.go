// Package loss owns the GRPO loss family: group-relative advantages of a
// step's rewards, the samples the policy update trains on, and the clipped
// policy-gradient loss (dapo, grpo, dr_grpo aggregation, the k3 KL penalty
// to the adapter-off model) whose gradient it adds into a LoRA adapter,
// micro-batch by micro-batch. It depends on model and kernels only, so the
// trainer, the CUDA full-model check and examples share one implementation.
package loss
