package perf

import (
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
)

// StepBytes is what one decode step of batch sequences at context ctx
// must move through HBM at least, by kind. Weights are bf16: every
// matrix and norm a step reads (ReadParams) and the batch's embedding
// rows, not a separate embedding table (only its rows are gathered; a
// tied one is read whole as the LM head). LoRA is f32 A and B. KV is the
// sampler's cache read at ctx positions. Logits are f32, written by the
// LM head and read once by sampling. Activations (a layer's are at most
// batch × 2·intermediate f32, 25 MB at 8B and batch 256) are left out:
// they live in L2 between kernels as often as not, and leaving them out
// makes the roofline time shorter, the bar harder.
type StepBytes struct {
	Weights, LoRA, KV, Logits float64
}

// Total is every kind's bytes.
func (b StepBytes) Total() float64 { return b.Weights + b.LoRA + b.KV + b.Logits }

// DecodeBytes is StepBytes of a rank-rank adapter (rank 0: none) and a
// cache of kv elements, every row reading its own context.
func DecodeBytes(c *model.Config, batch int, ctx float64, rank int, kv kernels.DType) StepBytes {
	params := ReadParams(c, batch) + float64(batch*c.HiddenSize)
	if !c.TieWordEmbeddings {
		params -= float64(c.VocabSize * c.HiddenSize)
	}
	return StepBytes{
		Weights: 2 * params,
		LoRA:    4 * loraParams(c, rank),
		KV:      contextKVBytes(c, batch, ctx, kv),
		Logits:  2 * 4 * float64(batch) * float64(c.VocabSize),
	}
}

// DecodeBytesShared is DecodeBytes with the KV of SharedKVBytes.
func DecodeBytesShared(c *model.Config, batch, group int, ctx float64, prompt, rank int, kv kernels.DType) StepBytes {
	b := DecodeBytes(c, batch, ctx, rank, kv)
	b.KV = SharedKVBytes(c, batch, group, ctx, prompt, kv)
	return b
}

// SharedKVBytes is the KV a decode step of batch sequences at context ctx
// reads when they come in groups of group rollouts forked from a prompt
// of prompt positions, and the step reads each group's shared blocks once
// (kernels.AttentionSharedPrefix, which model.Decoder runs whenever rows
// share blocks): only whole blocks of sampler.DefaultBlockSize are
// shared (a prompt's partly filled last block is each rollout's own
// copy), the batch's last batch % group rows are one more group (alone,
// and reading all of it, when it is one row), and every row reads its
// positions past the shared blocks itself. Group 1 is DecodeBytes' KV:
// nothing shared. The prefix pass's tiles of one group's (rollout, head)
// pairs, DECODE_HEADS at a time, read the same rows in neighbouring
// blocks of one launch; the model counts those repeats as L2 hits.
//
// Sliding-window layers read min(ctx, W) positions per row, shared or not:
// a decode step runs their attention row by row (model's sliding pool).
func SharedKVBytes(c *model.Config, batch, group int, ctx float64, prompt int, kv kernels.DType) float64 {
	if group < 2 || prompt < 1 {
		return contextKVBytes(c, batch, ctx, kv)
	}
	pos := float64(c.KVPositionBytes(kv) - c.KVWindowBlockBytes(1, kv))
	window := float64(batch) * c.KVWindowContextBytes(kv, ctx)
	bs := sampler.DefaultBlockSize
	shared := float64(min(prompt, int(ctx)) / bs * bs)
	readers := batch / group
	if batch%group > 0 {
		readers++
	}
	return (float64(readers)*shared+float64(batch)*(ctx-shared))*pos + window
}

// contextKVBytes is what batch rows at context ctx read of the cache,
// each its own (model.Config.KVContextBytes).
func contextKVBytes(c *model.Config, batch int, ctx float64, kv kernels.DType) float64 {
	if c.SlidingLayers() == 0 {
		return float64(batch) * float64(c.KVPositionBytes(kv)) * ctx
	}
	return float64(batch) * c.KVContextBytes(kv, ctx)
}

// DecodeKVBytes is the K and V a decode step reads: per sequence at
// position pos, pos+1 cached positions in kv elements (min(pos+1, W) of a
// sliding-window layer).
func DecodeKVBytes(c *model.Config, batch, pos int, kv kernels.DType) int64 {
	return int64(batch) * int64(c.KVContextBytes(kv, float64(pos+1)))
}

// loraParams is the adapter of rank r on all seven projections
// (lora.AllModules) as lora.New allocates it.
func loraParams(c *model.Config, r int) float64 {
	n, err := lora.Config{Rank: r, TargetModules: lora.AllModules}.ParamCount(c)
	if err != nil {
		panic(err) // lora.AllModules always parses
	}
	return float64(n)
}
