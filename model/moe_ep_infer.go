package model

import "fmt"

// Inference under expert parallelism (moe_ep.go). A prefill — Forward on
// a sharded model — exchanges each sparse layer's routed rows as the
// training forward does (moe_ep_exchange.go: one ExchangeCounts and two
// AllToAll a sparse layer), its buffers living through the layer only,
// since nothing is kept for a backward. A rank with nothing to prefill
// while others do calls ForwardIdle, which makes the same exchanges with
// no rows of its own: its experts still serve the other ranks' rows (in
// the dtype of a prefill over the sampler's paged cache, which the
// others' is).
// The static decode step exchanges differently (decode_ep.go): with
// counts fixed at capture, so the step stays one graph.

// layerForwardExchanging is layerForward for an inference forward: on a
// sharded model a sparse layer's exchange gets an arena of its own,
// freed once the layer is queued (the training forward keeps it for the
// backward).
func (m *Model) layerForwardExchanging(a *arena, l int, cache *KVCache, idx batchIndex, n int, s, prev *layerActs) {
	if m.ep == nil || !m.Config.IsSparse(l) || s.moe == nil {
		m.layerForward(a, l, cache, idx, n, s, prev)
		return
	}
	ex := &arena{be: m.Backend}
	s.moe.exchange = ex
	m.layerForward(a, l, cache, idx, n, s, prev)
	s.moe.exchange, s.moe.ep = nil, nil
	ex.free()
}

// ForwardIdle is a sharded model's part in a Forward that other ranks
// make while this one has no tokens: each sparse layer's exchange, in
// layer order, with no rows of its own to send, its experts running on
// the rows the other ranks send and returning their outputs. It fails
// on a model that holds every expert (there is nothing to take part in).
func (m *Model) ForwardIdle() error {
	if m.ep == nil {
		return fmt.Errorf("idle forward: the model holds every expert; only a rank of an expert-parallel group takes part in others' forwards")
	}
	be, c := m.Backend, m.Config
	a := &arena{be: be}
	defer a.free()
	s := &moeActs{}
	var b bufSpecs
	dt := m.pagedForwardActs()        // the rows' dtype on the ranks it serves
	b.add(&s.xp, dt, c.ExpertWidth()) // one row: nothing is sent from it
	b.add(&s.yp, dt, c.ExpertWidth())
	b.i32(&s.offsets, c.NumExperts+1) // zeros: no row for any expert
	b.alloc(a)
	for l := range c.NumLayers {
		if !c.IsSparse(l) {
			continue
		}
		ex := &arena{be: be}
		s.exchange = ex
		m.expertsExchanged(m.layers[l].channel.(moe), a, l, s, 0)
		ex.free()
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("idle forward on %s: %w", be.Name(), err)
	}
	return m.exchangeErr()
}
