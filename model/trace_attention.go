package model

import "github.com/grpo-dev/grpo/kernels"

// TraceAttentionDType is the dtype of a training trace's queries and K/V
// caches (ForwardTrain: the policy's trace and the KL reference's) for a
// model of shape c whose projections are stored as weights on a backend
// described by d: BF16 when the weights are bf16 and the backend keeps
// its KV caches in bf16 (Description.KVCache) and the head dim is one
// attention takes a bf16 q at (kernels.BF16AttentionHeadDim); F32
// otherwise. The estimate asks it before there is a Model; the Model asks
// it through traceAttention.
func (c *Config) TraceAttentionDType(d kernels.Description, weights kernels.DType) kernels.DType {
	if weights == kernels.BF16 && d.KVCache == kernels.BF16 && kernels.BF16AttentionHeadDim(c.HeadDim) {
		return kernels.BF16
	}
	return kernels.F32
}

// traceAttention decides, in this one place, whether the training trace's
// attention runs on bf16 q and caches. With bf16 weights the GPU already
// rounds every GEMM's input to bf16 (castsBF16) and q, k and v come out of
// a bf16 GEMM, so storing them in bf16 adds one rounding of the same size
// as those the model's bounds hold (internal/modeltest); in exchange
// attention — forward, the shared-prompt forward, recompute and backward —
// runs on the tensor-core flash kernels, which read half the bytes and
// multiply on bf16 tensor cores, where the f32 flash kernels were the
// trace's cost that grows with the square of its length. f32 weights keep
// f32 q and caches on every backend, so the f32 models' gradients stay
// those of an f32 attention, within the tight bars that hold them to the
// CPU backend and PyTorch; so does the CPU backend, whose KV dtype is f32.
func (m *Model) traceAttention() kernels.DType {
	return m.Config.TraceAttentionDType(m.Backend.Describe(), m.attentionWeights())
}

// attentionWeights is the dtype of the first attention layer's q/k/v
// weight (a checkpoint's projections share one dtype); F32 for a model
// without attention layers.
func (m *Model) attentionWeights() kernels.DType {
	for l := range m.W.Layers {
		if m.Config.decoderLayer(l).mixer.cacheKind() == MixAttention {
			return m.W.Layers[l].QKV.DType()
		}
	}
	return kernels.F32
}
