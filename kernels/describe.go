package kernels

// Description is what a backend says about itself: how it stores weights,
// what it computes them in, and where its memory is. Layers above ask it
// (Backend.Describe, or DescribeDevice before a backend exists) instead of
// comparing backend names, so a new backend needs no edits above kernels.
type Description struct {
	// Name is the name the backend is registered under.
	Name string
	// GPU reports a backend on a GPU, whose memory is its own (the backend
	// reports it through MemoryReporter); every other backend's buffers
	// are host memory.
	GPU bool
	// BF16Storage is the dtype a BF16 buffer is stored in: BF16 where ops
	// read bfloat16 directly, or F32 where the backend computes in f32
	// only and widens bfloat16 on upload (a model's bf16 weights then take
	// 4 bytes each).
	BF16Storage DType
	// BF16GEMM reports that MatMul with BF16 B rounds A to bf16 and
	// multiplies bf16 by bf16 with f32 accumulation (cublasGemmEx), in
	// scratch copies of A the backend keeps; otherwise A stays f32.
	BF16GEMM bool
	// KVCache is the dtype of the sampler's paged KV cache (its compute
	// dtype): BF16 on a GPU, where KVWrite rounds keys and values to
	// bf16 and Attention widens them to f32 as it reads; F32 on the CPU.
	// A training trace's cache (and q) take it too when the model's
	// weights are bf16 (model's TraceAttentionDType: the tensor-core
	// attention); with f32 weights they are F32 on every backend, so the
	// gradients through q, k and v are those of an f32 attention.
	KVCache DType
	// Graphs reports a backend that captures and replays work as graphs
	// (it implements Graphs): the sampler's static decode step runs
	// there, and its KV cache holds a padding slot and block beside the
	// ones asked for (sampler.New), which the estimate prices.
	Graphs bool
}

// Storage is the dtype a buffer allocated as dt is stored in.
func (d Description) Storage(dt DType) DType {
	if dt == BF16 {
		return d.BF16Storage
	}
	return dt
}

// Describer is implemented by every Backend.
type Describer interface {
	// Describe returns the backend's description; it is the same for the
	// life of the backend.
	Describe() Description
}
