package bench

import "github.com/grpo-dev/grpo/kernels/cuda"

// Counts are what the CUDA backend (on a GPU or under emu) asked of
// its device for one unit of each figure, read from its counting device
// (cuda.Counter) after the timed runs: one decode step, one whole prefill
// (Batch/Group prompts of Prefill tokens), one train micro-batch. The decode
// step's KV bytes are computed from the sequences' lengths (every layer
// reads K and V for each position up to the new token's), which no
// counter can see: the positions live on the device.
type Counts struct {
	DecodeStep    *cuda.Counts `json:"decode_step,omitempty"`
	DecodeKVBytes int64        `json:"decode_step_kv_bytes,omitempty"`
	// DecodeKVDType is the dtype of the cache the bench decoded over (the
	// sampler's: bf16 on cuda and emu).
	DecodeKVDType string `json:"decode_kv_dtype,omitempty"`
	// DecodeGraphErr is why decode ran op by op on a device with graphs.
	DecodeGraphErr  string       `json:"decode_graph_error,omitempty"`
	Prefill         *cuda.Counts `json:"prefill,omitempty"`
	TrainMicroBatch *cuda.Counts `json:"train_micro_batch,omitempty"`
	// TrainStepFLOPs are the FLOPs of one whole train step, every
	// micro-batch's (hardware FLOP utilisation's numerator).
	TrainStepFLOPs int64 `json:"train_step_flops,omitempty"`
}
