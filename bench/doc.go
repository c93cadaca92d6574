// Package bench owns the measured throughput runs of `grpo bench` on one
// backend: prefill and decode over the sampler's paged KV cache, one LoRA
// train step, matmul, and whole GRPO steps through the trainer's own
// update (update.Step); the figures they yield (tokens/s, GFLOP/s, and on
// a GPU the MFU, HFU and HBM fractions against estimate/perf's peaks),
// and what a counting backend (cuda, emu) saw each unit of work ask of
// its device. It measures and returns; the CLI parses flags and prints,
// and the decode performance model is estimate/perf's.
package bench
