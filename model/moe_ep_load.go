package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// LoadExperts is Load for rank coll.Rank() of an expert-parallel group of
// coll.Size() ranks: of every sparse layer's experts it reads only the
// rank's share (a checkpoint's per-expert tensors for other experts are
// never read; from a tensor stacking every expert — Qwen3.5-MoE's, or
// gpt-oss's Parameters, MXFP4 blocks and scales, and biases — the run of
// the rank's is copied), so a rank's memory holds its experts alone from
// the start.
func LoadExperts(dir string, be kernels.Backend, coll kernels.Collective) (*Model, error) {
	return load(dir, be, coll)
}

// holdExperts makes the config's weight specs those of coll's rank's
// experts (heldExperts).
func (c *Config) holdExperts(coll kernels.Collective) error {
	if err := c.checkShardable(coll.Size()); err != nil {
		return err
	}
	n := c.NumExperts / coll.Size()
	c.held.first, c.held.n = coll.Rank()*n, n
	return nil
}

// checkShardable is what expert parallelism over ranks needs of the
// config: sparse layers, and experts that split evenly.
func (c *Config) checkShardable(ranks int) error {
	if c.SparseLayers() == 0 {
		return fmt.Errorf("expert parallel: %s has no mixture-of-experts layers to shard", c.ModelType)
	}
	if c.NumExperts%ranks != 0 {
		return fmt.Errorf("expert parallel: %d experts do not split evenly over %d ranks", c.NumExperts, ranks)
	}
	return nil
}

// keepExperts copies experts [first, first+n) of b, which stacks ne
// experts' tensors end to end, into a buffer of their own and frees b.
func keepExperts(be kernels.Backend, b kernels.Buffer, ne, first, n int) kernels.Buffer {
	per := b.Len() / ne
	kept := be.Alloc(b.DType(), n*per)
	be.Copy(kept, b.Slice(first*per, n*per))
	be.Free(b)
	return kept
}
