// Package perf owns the decode performance model (grpo bench
// --perf-model, BENCHMARKS.md "Decode performance model") and the
// roofline arithmetic grpo bench reports its figures against: the bytes
// and FLOPs of a step, worked out from the sizes model and lora report
// for their allocations; the least time the H200 can take for them; and
// what the real static decode step asks of a device, counted on the null
// device (cuda.NewNullDevice), which needs no GPU.
package perf
