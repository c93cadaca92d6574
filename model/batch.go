package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Batch is a packed set of new tokens from one or more sequences. Token i
// is Tokens[i], belongs to the sequence held in KV-cache slot Slots[i] (its
// row of the block table), and sits at position Positions[i] of that
// sequence. Within a Forward call a
// token attends to every cache entry of its slot at positions ≤ its own, so
// those entries must be written earlier or by the same batch.
type Batch struct {
	Tokens    []int32
	Slots     []int32
	Positions []int32
	// Experts, when not nil, replays a recorded routing in the sparse
	// layers of a mixture-of-experts model, and RecordExperts, when not
	// nil, receives the routing Forward chose (layout: moe_routing.go).
	Experts, RecordExperts []int32
	shares                 []prefixShare // Share's declarations, for ForwardTrain
	// split, in a reduced training batch whose groups share prompts, is
	// the linear-attention layers' two calls (trainshare_linear.go).
	split *linearSplit
}

// Len is the number of tokens in the batch.
func (b *Batch) Len() int { return len(b.Tokens) }

// Add appends the tokens of one sequence in slot starting at position start.
func (b *Batch) Add(slot int, start int, tokens ...int32) {
	for i, t := range tokens {
		b.Tokens = append(b.Tokens, t)
		b.Slots = append(b.Slots, int32(slot))
		b.Positions = append(b.Positions, int32(start+i))
	}
}

// validate checks the batch against the model and the cache and maps the
// cache blocks it writes (KVCache.mapBatch).
func (b *Batch) validate(cfg *Config, cache *KVCache) error {
	n := len(b.Tokens)
	if n == 0 {
		return fmt.Errorf("empty batch")
	}
	if len(b.Slots) != n || len(b.Positions) != n {
		return fmt.Errorf("batch has %d tokens but %d slots and %d positions", n, len(b.Slots), len(b.Positions))
	}
	if err := b.validateRouting(cfg); err != nil {
		return err
	}
	for i := range n {
		if t := b.Tokens[i]; t < 0 || int(t) >= cfg.VocabSize {
			return fmt.Errorf("token id %d at index %d is outside the vocabulary [0, %d)", t, i, cfg.VocabSize)
		}
		if s := b.Slots[i]; s < 0 || int(s) >= cache.Slots {
			return fmt.Errorf("slot %d at index %d is outside the cache's %d slots", s, i, cache.Slots)
		}
		if p := b.Positions[i]; p < 0 || int(p) >= cache.MaxLen {
			return fmt.Errorf("position %d at index %d is beyond the cache length %d", p, i, cache.MaxLen)
		}
	}
	switch {
	case b.split != nil:
		if err := b.split.check(b); err != nil {
			return err
		}
	case cache.hybrid:
		if _, err := b.runs(cache.linear != nil); err != nil {
			return err
		}
	}
	return cache.mapBatch(b)
}

// batchIndex holds a batch's index arrays on the backend, and the cache's
// block table they index.
type batchIndex struct {
	tokens, slots, pos kernels.Buffer
	pages              kernels.KVPages
	// windowPages is the sliding-window layers' table (pagesFor): pages
	// itself unless the cache keeps those layers in a pool of their own.
	windowPages kernels.KVPages
	// groups, when not nil, says which tokens read a shared prompt
	// (kernels.AttentionSharedPrefix): a decode step's, set at Load.
	groups kernels.Buffer
	// runs (nRuns × 4) cuts the batch into the linear-attention layers'
	// runs (Batch.runs); nil for a model without them. With a linearSplit
	// they are the rest's, and promptRuns (nPromptRuns × 4) the first
	// promptRows rows' (linearCalls).
	runs        kernels.Buffer
	nRuns       int
	promptRuns  kernels.Buffer
	nPromptRuns int
	promptRows  int
}

// upload copies the batch's index arrays to the backend, with the cache's
// block table (mapped for the batch first).
func (b *Batch) upload(be kernels.Backend, a *arena, cache *KVCache) batchIndex {
	n := len(b.Tokens)
	idx := batchIndex{pages: cache.Pages(), windowPages: cache.windowPages()}
	indexSpecs(&idx, n).alloc(a)
	be.UploadI32(idx.tokens, b.Tokens)
	be.UploadI32(idx.slots, b.Slots)
	be.UploadI32(idx.pos, b.Positions)
	put := func(runs []int32) (kernels.Buffer, int) {
		if len(runs) == 0 {
			return nil, 0
		}
		var buf kernels.Buffer
		bufSpecs{runsSpec(&buf, len(runs)/runFields)}.alloc(a)
		be.UploadI32(buf, runs)
		return buf, len(runs) / runFields
	}
	switch {
	case b.split != nil:
		idx.promptRows = b.split.promptRows
		idx.promptRuns, idx.nPromptRuns = put(b.split.prompt)
		idx.runs, idx.nRuns = put(b.split.rest)
	case cache.hybrid:
		// validate checked that the batch cuts into runs.
		runs, _ := b.runs(cache.linear != nil)
		idx.runs, idx.nRuns = put(runs)
	}
	return idx
}

// runFields is the int32 of one linear-attention run: its first row, its
// rows, its initial and its final state slot (Batch.runs).
const runFields = 4

// indexSpecs lists a batch's index arrays for n tokens: its tokens, slots
// and positions.
func indexSpecs(idx *batchIndex, n int) bufSpecs {
	var b bufSpecs
	b.i32(&idx.tokens, n)
	b.i32(&idx.slots, n)
	b.i32(&idx.pos, n)
	return b
}

// runsSpec is the buffer of runs linear-attention runs.
func runsSpec(dst *kernels.Buffer, runs int) bufSpec {
	return bufSpec{dst, kernels.I32, runs * runFields}
}
