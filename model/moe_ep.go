package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Expert parallelism. A Model sharded over a group of ranks
// (ShardExperts) holds only its own experts: rank r of R holds experts
// [r·E/R, (r+1)·E/R) of every sparse layer (the split estimate's EP plan
// assumes), their base weights and — lora.New asks LocalExperts — their
// adapters, so their optimizer state too; attention, the dense layers,
// the routers and shared experts stay whole on every rank. Each rank
// trains its own tokens: a sparse layer routes them where they live,
// sends every routed row to its expert's rank, runs its own experts on
// the rows it receives from every rank, and sends the outputs back
// (moe_ep_exchange.go); the backward mirrors it. Each sparse layer's
// exchange is a collective, so every rank runs the same forwards and
// backwards, layer for layer, in the same order. Sampling runs under
// expert parallelism too: Forward (and ForwardIdle) exchange as the
// training forward does (moe_ep_infer.go), and the static decode step
// with counts fixed at capture (decode_ep.go).

// expertParallel is a sharded model's group and the first error of its
// exchanges: a sparse layer's forward has no error to return, so it
// keeps it here, skips its remaining exchanges, and ForwardTrain or
// Backward report it once the pass is queued.
type expertParallel struct {
	coll kernels.Collective
	err  error
}

// ShardExperts keeps only this rank's experts of every sparse layer
// (coll.Rank() of coll.Size() ranks) and frees the others' weights. The
// model must hold every expert (a model loaded whole; MXFP4 experts are
// sliced as they are), and the ranks must split the experts evenly. Call it before building
// the adapter: lora.New sizes the experts' adapters by LocalExperts.
func (m *Model) ShardExperts(coll kernels.Collective) error {
	c, be := m.Config, m.Backend
	if m.ep != nil {
		return fmt.Errorf("expert parallel: the model's experts are sharded already")
	}
	if err := c.checkShardable(coll.Size()); err != nil {
		return err
	}
	ne := c.NumExperts
	first, n := coll.Rank()*ne/coll.Size(), ne/coll.Size()
	for l := range c.NumLayers {
		if !c.IsSparse(l) {
			continue
		}
		w := m.W.Layers[l].MoE
		for _, b := range append([]*kernels.Buffer{&w.GateUp, &w.Down, &w.GateUpBias, &w.DownBias}, w.mxfp4Parts()...) {
			if *b != nil {
				*b = keepExperts(be, *b, ne, first, n)
			}
		}
		w.Experts = make([]Expert, n)
		w.reslice(c)
	}
	c.held.first, c.held.n = first, n
	m.ep = &expertParallel{coll: coll}
	return be.Sync()
}

// LocalExperts is the range of experts this model holds: [first,
// first+n), every expert unless ShardExperts kept a rank's share.
func (m *Model) LocalExperts() (first, n int) {
	ne := m.Config.NumExperts
	if m.ep == nil {
		return 0, ne
	}
	ranks := m.ep.coll.Size()
	return m.ep.coll.Rank() * ne / ranks, ne / ranks
}

// ExpertParallel is the collective the model's experts are sharded over,
// nil when it holds them all.
func (m *Model) ExpertParallel() kernels.Collective {
	if m.ep == nil {
		return nil
	}
	return m.ep.coll
}

// exchangeErr returns and clears the first failed exchange's error.
func (m *Model) exchangeErr() error {
	if m.ep == nil || m.ep.err == nil {
		return nil
	}
	err := m.ep.err
	m.ep.err = nil
	return fmt.Errorf("expert parallel exchange on rank %d: %w", m.ep.coll.Rank(), err)
}
