package main

import (
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
)

// sharedKVBytes is the KV a decode step of batch sequences at context ctx
// reads when they come in groups of group rollouts forked from a prompt
// of prompt positions, and the step reads each group's shared blocks once
// (kernels.AttentionSharedPrefix, which model.Decoder runs whenever rows
// share blocks): only whole blocks of sampler.DefaultBlockSize are
// shared (a prompt's partly filled last block is each rollout's own
// copy), the batch's last batch % group rows are one more group (alone,
// and reading all of it, when it is one row), and every row reads its
// positions past the shared blocks itself. Group 1 is decodeBytes' KV:
// nothing shared. The prefix pass's tiles of one group's (rollout, head)
// pairs, DECODE_HEADS at a time, read the same rows in neighbouring
// blocks of one launch; the model counts those repeats as L2 hits.
func sharedKVBytes(c *model.Config, batch, group int, ctx float64, prompt, kvElem int) float64 {
	pos := float64(kvPositionBytes(c, kvElem))
	if group < 2 || prompt < 1 {
		return float64(batch) * ctx * pos
	}
	bs := sampler.DefaultBlockSize
	shared := float64(min(prompt, int(ctx)) / bs * bs)
	readers := batch / group
	if batch%group > 0 {
		readers++
	}
	return (float64(readers)*shared + float64(batch)*(ctx-shared)) * pos
}

// decodeBytesShared is decodeBytes with the KV of sharedKVBytes.
func decodeBytesShared(c *model.Config, batch, group int, ctx float64, prompt, rank, kvElem int) decodeStepBytes {
	b := decodeBytes(c, batch, ctx, rank, kvElem)
	b.KV = sharedKVBytes(c, batch, group, ctx, prompt, kvElem)
	return b
}
