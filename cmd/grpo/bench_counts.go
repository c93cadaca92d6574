package main

import (
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// benchCounts are what the CUDA backend (on a GPU or under emu) asked of
// its device for one unit of each figure, read from its counting device
// (cuda.Counter) after the timed runs: one decode step, one whole prefill
// (--batch prompts of --prefill tokens), one train micro-batch. The decode
// step's KV bytes are computed from the sequences' lengths (every layer
// reads K and V for each position up to the new token's), which no
// counter can see: the positions live on the device.
type benchCounts struct {
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

// counted returns the backend's counter, or nil when it has none (cpu).
func counted(be kernels.Backend) *cuda.Backend {
	b, _ := be.(*cuda.Backend)
	return b
}

// measure runs f and returns what it asked of the device, or nil without
// a counter. The bench wraps its timed units in it, so the figures are
// those of the last (warm) run, at no extra work. A Sync inside f counts;
// the callers' own Syncs after it do not.
func measure(be kernels.Backend, f func() error) (*cuda.Counts, error) {
	cb := counted(be)
	if cb == nil {
		return nil, f()
	}
	before := cb.Counts()
	err := f()
	c := cb.Counts().Sub(before)
	return &c, err
}

// tagWeights marks the model's weights (and the adapter's, when there is
// one) so GEMMs reading them count their bytes.
func tagWeights(m *model.Model, ad *lora.Adapter) {
	cb := counted(m.Backend)
	if cb == nil {
		return
	}
	m.MapWeights(func(b kernels.Buffer) kernels.Buffer {
		cb.TagWeights(b)
		return b
	})
	if ad == nil {
		return
	}
	for l := range m.Config.NumLayers {
		for p := range model.NumProj {
			if lr := ad.LoRA(l, p); lr != nil {
				cb.TagWeights(lr.A, lr.B)
			}
		}
	}
}

// decodeKVBytes is the K and V a decode step reads: per sequence at
// position pos, pos+1 cached positions (kvPositionBytes) of elemBytes per
// element (kvElemBytes: the sampler's cache dtype).
func decodeKVBytes(c *model.Config, batch, pos, elemBytes int) int64 {
	return int64(batch) * int64(pos+1) * kvPositionBytes(c, elemBytes)
}
