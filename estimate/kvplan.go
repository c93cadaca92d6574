package estimate

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
)

// KVPlan is how the sampler's paged KV cache is sized for one
// environment's rollouts (model.KVCache, sampler.Config.Blocks): a pool of
// blocks of sampler.DefaultBlockSize tokens in the device's KV dtype, the
// rollouts it holds at once (each reserving its worst case, a group's
// shared prompt blocks once: sampler.ConcurrencyCap) and the passes that
// takes. The pool is every rollout's worst case at once unless the free
// memory is smaller; then it is what fits, and the rest of the step's
// rollouts wait for blocks (rollout.Options.KVBlocks).
type KVPlan struct {
	Phase, Env string
	// Rollouts is the sequences of the step; Group the rollouts of one
	// example, which share its prompt.
	Rollouts, Group int
	// MaxLen is a rollout's worst case in tokens (the sampler's MaxLen);
	// PromptTokens the prompt length the sharing is counted for.
	MaxLen, PromptTokens int
	BlockSize            int
	DType                kernels.DType
	// BlockBytes is one block's keys and values over every layer of the
	// pool: every attention layer, or, for a model with sliding-window
	// layers, the full ones; those keep WindowBlocks blocks of
	// WindowBlockBytes in a pool of their own (model.KVCache's sliding
	// pool, sampler.WindowBlocks: each rollout's window and one Forward
	// call's positions), padding included; 0 without such layers.
	BlockBytes       int64
	WindowBlocks     int
	WindowBlockBytes int64
	// Blocks is the pool; BlocksAll what every rollout's worst case at
	// once takes (a sampler's default pool).
	Blocks, BlocksAll int
	// Pad is 1 on a device that captures graphs (Description.Graphs),
	// where the sampler's cache holds one slot (a block-table row) and
	// one block beyond Rollouts and Blocks: the static decode step's
	// padding slot (sampler.New); else 0.
	Pad int
	// Cap is the rollouts held at once and Passes the waves a step's
	// rollouts take at that cap (0 when not even one rollout fits).
	Cap, Passes int
	// Bounded reports a pool cut to the free memory.
	Bounded bool
	mc      *model.Config
	// DecodeBytes is the static decode step's workspaces a sampler of
	// this plan holds once every padded bucket (1, 2, 4, …, the
	// rollouts) has run: what a sampler kept across steps holds beside
	// its pool (KeepSampler).
	DecodeBytes int64
}

// newKVPlan sizes the pool for every rollout of s at once on dev.
func newKVPlan(mc *model.Config, s EnvShape, dev string) KVPlan {
	p := KVPlan{Env: s.Name, Rollouts: max(1, s.Examples*s.Rollouts), Group: max(1, s.Rollouts),
		MaxLen:       rollout.CacheLenReplies(mc, s.PromptTokens, s.MaxTokens, s.MaxTurns, s.replyTokens()),
		PromptTokens: max(1, s.PromptTokens), BlockSize: sampler.DefaultBlockSize, DType: kvDType(dev)}
	if s.MeanPromptTokens > 0 {
		p.PromptTokens = s.MeanPromptTokens
	}
	if d, ok := kernels.DescribeDevice(dev); ok && d.Graphs {
		p.Pad = 1
	}
	p.WindowBlockBytes = mc.KVWindowBlockBytes(p.BlockSize, p.DType)
	p.BlockBytes = mc.KVBlockBytes(p.BlockSize, p.DType) - p.WindowBlockBytes
	p.BlocksAll = p.Rollouts * model.BlocksFor(p.MaxLen, p.BlockSize)
	p.mc = mc
	p.bound(p.BlocksAll)
	p.Bounded = false
	return p
}

// windowBlocks is the sliding pool the sampler allocates beside a full
// pool of blocks: sampler.WindowBlocks with the rollout's sampler sizes
// (a slot per rollout, the default Forward call of max(2048, slots)
// positions).
func (p KVPlan) windowBlocks(blocks int) int {
	return sampler.WindowBlocks(p.mc, p.Rollouts, p.MaxLen, p.BlockSize, blocks, max(2048, p.Rollouts), p.Pad)
}

// kvDType is the dtype the sampler's cache has on dev (f32 for a name
// that is not a device, like the CPU).
func kvDType(dev string) kernels.DType {
	if d, ok := kernels.DescribeDevice(dev); ok {
		return model.PagedKVDType(d)
	}
	return kernels.F32
}

// bound makes the pool blocks (at most BlocksAll) and recomputes the cap.
func (p *KVPlan) bound(blocks int) {
	p.Blocks = max(0, min(blocks, p.BlocksAll))
	p.WindowBlocks = p.windowBlocks(p.Blocks)
	p.Bounded = p.Blocks < p.BlocksAll
	p.Cap = sampler.ConcurrencyCap(p.Blocks, p.Rollouts, p.PromptTokens, p.Group, p.MaxLen, p.BlockSize, true)
	p.Passes = 0
	if p.Cap > 0 {
		p.Passes = (p.Rollouts + p.Cap - 1) / p.Cap
	}
}

// Bytes is the pool and its block table (an int32 per slot and block of
// a rollout's worst case), the padding slot's row and block included,
// and the sliding pool with its own table (WindowBytes).
func (p KVPlan) Bytes() int64 {
	return int64(p.Blocks+p.Pad)*p.BlockBytes + p.tableBytes() + p.WindowBytes()
}

// WindowBytes is the sliding-window layers' pool and its table, 0 for a
// model without them.
func (p KVPlan) WindowBytes() int64 {
	if p.WindowBlockBytes == 0 {
		return 0
	}
	return int64(p.WindowBlocks)*p.WindowBlockBytes + p.tableBytes()
}

// tableBytes is one block table: an int32 per slot and block of a
// rollout's worst case.
func (p KVPlan) tableBytes() int64 {
	return model.KVTableBytes(int64(p.Rollouts+p.Pad) * int64(model.BlocksFor(p.MaxLen, p.BlockSize)))
}

// Summary is the plan in one line.
func (p KVPlan) Summary() string {
	how := "every rollout's worst case at once"
	if p.Bounded {
		how = "cut to the free memory"
	}
	if p.Cap == 0 {
		return fmt.Sprintf("%s %s: %d blocks of %d tokens (%v) cannot hold one rollout of %d tokens", p.Phase, p.Env, p.Blocks, p.BlockSize, p.DType, p.MaxLen)
	}
	return fmt.Sprintf("%s %s: %d blocks of %d tokens (%v, %s; %s), %d of %d rollouts at once (groups of %d share a %d-token prompt's blocks), %d pass(es)",
		p.Phase, p.Env, p.Blocks, p.BlockSize, p.DType, FormatBytes(int64(p.Blocks)*p.BlockBytes), how, p.Cap, p.Rollouts, p.Group, p.PromptTokens, p.Passes)
}
