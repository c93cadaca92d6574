package sampler

import (
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// The arithmetic of the sampler's block reservations, shared with the
// estimate (which sizes the pool before anything is allocated). A
// sequence reserves its worst case, maxLen tokens, when it starts, so a
// started sequence never runs out of blocks and none is ever preempted;
// the sequences of a group share the full blocks of their prompt (all but
// its last token), which are reserved once.

// seqBlocks is the blocks one sequence of maxLen tokens spans.
func seqBlocks(maxLen, blockSize int) int { return model.BlocksFor(maxLen, blockSize) }

// sharedBlocks is the full blocks of the positions n sequences on one
// prompt share: those of all but the prompt's last token, when sharing
// and n ≥ 2; the partly filled block after them is each sequence's own.
func sharedBlocks(promptLen, n, blockSize int, share bool) int {
	if n < 2 || !share {
		return 0
	}
	return (promptLen - 1) / blockSize
}

// GroupBlocks is the blocks a group of n sequences on a prompt of
// promptLen tokens reserves in a cache of blockSize-token blocks: each
// sequence's worst case of maxLen tokens, the shared prompt blocks counted
// once when share is set.
func GroupBlocks(promptLen, n, maxLen, blockSize int, share bool) int {
	sh := sharedBlocks(promptLen, n, blockSize, share)
	return sh + n*(seqBlocks(maxLen, blockSize)-sh)
}

// ConcurrencyCap is how many sequences a pool of blocks and slots holds at
// once when they start in groups of n on prompts of promptLen tokens:
// whole groups while they fit, then as much of one more group as fits.
// It is what scheduling within memory reaches, and what the estimate
// reports.
func ConcurrencyCap(blocks, slots, promptLen, n, maxLen, blockSize int, share bool) int {
	total := 0
	for slots > 0 {
		k := min(n, slots)
		for k > 0 && GroupBlocks(promptLen, k, maxLen, blockSize, share) > blocks {
			k--
		}
		if k == 0 {
			break
		}
		blocks -= GroupBlocks(promptLen, k, maxLen, blockSize, share)
		slots -= k
		total += k
		if k < n {
			break
		}
	}
	return total
}

// WindowBlocks is the sliding-window layers' pool a sampler allocates for
// slots sequences of maxLen tokens in blocks of blockSize, a full pool of
// blocks, Forward calls of prefillTokens positions and pad padding slots
// and blocks (New): each slot's window and one call's positions
// (model.Config.WindowPoolBlocks). A step runs every sequence it
// prefilled in the step before (a prompt is followed by its decode), so
// no slot keeps more than its window between steps. Never more than the
// full pool: a slot's sliding blocks hold a subset of its positions
// there, shared at least as much. 0 for a model without sliding layers.
func WindowBlocks(mc *model.Config, slots, maxLen, blockSize, blocks, prefillTokens, pad int) int {
	return min(blocks+pad, mc.WindowPoolBlocks(slots+pad, maxLen, blockSize, prefillTokens))
}

// KVBytes is the keys and values New allocates for cfg on m's backend
// (block tables and recurrent state not counted): the full layers' pool of
// cfg.Blocks blocks and the sliding layers' own pool of WindowBlocks,
// each with the padding block of a backend with graphs. A model with
// sliding windows needs less than every layer at full length.
func KVBytes(m *model.Model, cfg Config) (int64, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return 0, err
	}
	pad := 0
	if _, ok := m.Backend.(kernels.Graphs); ok {
		pad = 1
	}
	dt := model.PagedKVDType(m.Backend.Describe())
	win := m.Config.KVWindowBlockBytes(cfg.BlockSize, dt)
	full := m.Config.KVBlockBytes(cfg.BlockSize, dt) - win
	return int64(cfg.Blocks+pad)*full + int64(windowBlocks(m, cfg, pad))*win, nil
}
