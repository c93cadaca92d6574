package model

import "github.com/grpo-dev/grpo/kernels"

// A sparse layer's exchange under expert parallelism (moe_ep.go). After
// MoEGroup the layer's permuted rows are grouped by expert, hence by the
// rank that holds the expert: the rows for rank p are one run. The
// forward makes three collective calls:
//
//	ExchangeCounts  the rows per expert, a block per rank: every rank
//	                learns how many rows each rank sends each of its
//	                experts;
//	AllToAll        the gathered inputs xp to the experts' ranks; the
//	                received rows come rank after rank, each rank's
//	                grouped by expert, and are gathered expert after
//	                expert (perm), the order the grouped GEMMs take;
//	                this rank's experts run on them (expertsForward);
//	AllToAll        the outputs, scattered back to the received order,
//	                home into yp, where MoECombine weighs them.
//
// The backward sends yp's gradient out the same way, runs the experts'
// backward there, and brings the input gradient home into dxp: two
// AllToAll, with the forward's counts and permutation. The counts are
// host values (NCCL's sends take host counts), so each sparse layer's
// forward waits for the device once, to read its grouping's offsets: the
// one wait a training pass makes per layer under expert parallelism.

// expertExchange is what a sparse layer's forward exchanged, kept for
// its backward: the rows this rank sent each rank and received from each,
// the permutation from received order to its experts' order, and the
// experts' rows with what their backward reads (the received input, gate,
// up and each adapter's x·Aᵀ; its forward's activation, fused gate/up
// and output, and the buffer the rows land in and leave from, live
// through the layer's forward only).
type expertExchange struct {
	sent, received []int
	perm           kernels.Buffer // I32: expert-major row i is received row perm[i]
	local          expertRows
}

// fail keeps err, the first of a pass's failed exchanges.
func (ep *expertParallel) fail(err error) {
	if ep.err == nil {
		ep.err = err
	}
}

// expertsExchanged is moeForward's experts under expert parallelism: from
// s.xp (the layer's permuted rows, grouped by expert) into s.yp, through
// the experts' ranks. The exchange goes into s.ep, its buffers into a
// (s.exchange when set).
func (m *Model) expertsExchanged(b moe, a *arena, l int, s *moeActs, rows int) {
	ep, hd := m.ep, m.Config.ExpertWidth() // the rows exchanged: latent wide in a latent MoE
	if ep.err != nil {
		return // the group has failed; ForwardTrain reports it
	}
	if s.exchange != nil {
		a = s.exchange
	}
	tmp := &arena{be: m.Backend}
	defer tmp.free()
	ex, moved, err := m.dispatch(a, tmp, l, s.xp, s.offsets)
	if err != nil {
		ep.fail(err)
		return
	}
	s.ep = ex
	e := ex.local
	if e.rows > 0 {
		m.expertsForward(b, l, e)
		m.Backend.ScatterRows(moved, e.y, ex.perm, e.rows, hd)
	}
	ep.fail(ep.coll.AllToAll(moved, ex.received, s.yp, ex.sent, hd))
}

// dispatch exchanges the counts of xp's rows (grouped by expert,
// offsets over every expert) and sends them to their experts' ranks,
// gathering what this rank receives into its experts' order. What the
// backward reads goes into a, the rest into tmp; moved is the rows as
// they arrived, in tmp.
func (m *Model) dispatch(a, tmp *arena, l int, xp, offsets kernels.Buffer) (ex *expertExchange, moved kernels.Buffer, err error) {
	be, c, coll := m.Backend, m.Config, m.ep.coll
	ne, hd := c.NumExperts, c.ExpertWidth()
	off := make([]int32, ne+1)
	be.DownloadI32(off, offsets)
	if err := be.Sync(); err != nil {
		return nil, nil, err
	}
	counts := make([]int, ne)
	for e := range counts {
		counts[e] = int(off[e+1] - off[e])
	}
	got, err := coll.ExchangeCounts(counts)
	if err != nil {
		return nil, nil, err
	}
	_, per := m.LocalExperts()
	ex = &expertExchange{sent: blockSums(counts, per), received: blockSums(got, per)}
	perm, local := expertOrder(got, per)
	kept, rest := m.exchangeSpecs(ex, &moved, l, len(perm), per, xp.DType())
	kept.alloc(a)
	rest.alloc(tmp)
	ex.local.rows, ex.local.experts = len(perm), per
	if len(perm) > 0 { // a rank none of the group's rows route to receives nothing
		be.UploadI32(ex.perm, perm)
	}
	be.UploadI32(ex.local.offsets, local)
	if err := coll.AllToAll(xp, ex.sent, moved, ex.received, hd); err != nil {
		return nil, nil, err
	}
	if len(perm) > 0 {
		be.GatherRows(ex.local.x, moved, ex.perm, len(perm), hd)
	}
	return ex, moved, nil
}

// blockSums sums counts in blocks of per: the rows for (or from) each
// rank.
func blockSums(counts []int, per int) []int {
	out := make([]int, len(counts)/per)
	for i, n := range counts {
		out[i/per] += n
	}
	return out
}

// expertOrder lays out the rows this rank receives, got[p·per + e] from
// rank p for its expert e, arriving rank after rank and each rank's
// expert after expert: perm lists them expert after expert (rank after
// rank within an expert, so an expert's rows keep the order one device
// holding every token would give them), and offsets (per + 1) are the
// experts' first rows in that order.
func expertOrder(got []int, per int) (perm, offsets []int32) {
	ranks := len(got) / per
	start := make([]int, ranks) // the first received row of rank p's run
	for p := 1; p < ranks; p++ {
		start[p] = start[p-1]
		for _, n := range got[(p-1)*per : p*per] {
			start[p] += n
		}
	}
	offsets = make([]int32, per+1)
	for e := range per {
		offsets[e] = int32(len(perm))
		for p := range ranks {
			at := start[p]
			for _, n := range got[p*per : p*per+e] {
				at += n
			}
			for i := range got[p*per+e] {
				perm = append(perm, int32(at+i))
			}
		}
	}
	offsets[per] = int32(len(perm))
	return perm, offsets
}

// exchangeSpecs lists a layer's exchange buffers for rows received rows
// over per local experts (at least one row each: an arena buffer has
// elements): kept for the backward, the permutation and offsets and the
// experts' input, gate, up and each adapted projection's x·Aᵀ; the rest,
// the received rows as they arrived (moved), the fused gate/up, the
// activation and the output. The rows between the experts' ops take dt,
// the dtype of the layer's own permuted rows: bf16 in a bf16 layer
// (moe.bf16Acts), as on one device; the x·Aᵀ stay f32.
func (m *Model) exchangeSpecs(ex *expertExchange, moved *kernels.Buffer, l, rows, per int, dt kernels.DType) (kept, rest bufSpecs) {
	c, e := m.Config, &ex.local
	r, hd, mi := max(rows, 1), c.ExpertWidth(), c.MoEIntermediateSize
	kept.i32(&ex.perm, r)
	kept.i32(&e.offsets, per+1)
	kept.add(&e.x, dt, r*hd)
	kept.add(&e.gate, dt, r*mi)
	kept.add(&e.up, dt, r*mi)
	for _, p := range []Proj{ProjGate, ProjUp, ProjDown} {
		if lr := m.expertLoRA(l, p); lr != nil {
			kept.f32(&e.xa[p], r*lr.Rank)
		}
	}
	rest.add(moved, dt, r*hd)
	rest.add(&e.fused, dt, r*2*mi)
	rest.add(&e.act, dt, r*mi)
	rest.add(&e.y, dt, r*hd)
	return kept, rest
}

// expertsBackwardExchanged is moeBackward's experts under expert
// parallelism: dyp, the gradient of the layer's yp, goes out to the
// experts' ranks, their backward runs there (adding the local experts'
// adapter gradients), and the gradient of xp comes home into dxp.
func (m *Model) expertsBackwardExchanged(b moe, l int, s *moeActs, dyp, dxp kernels.Buffer) {
	ep, be, hd := m.ep, m.Backend, m.Config.ExpertWidth() // the rows exchanged: latent wide in a latent MoE
	ex := s.ep
	if ep.err != nil || ex == nil {
		return // the group has failed; Backward reports it
	}
	a := &arena{be: be}
	defer a.free()
	var g expertGrads
	var moved kernels.Buffer
	e := ex.local
	m.exchangeGradSpecs(&g, &moved, &e.act, l, e.rows, dyp.DType()).alloc(a)
	if err := ep.coll.AllToAll(dyp, ex.sent, moved, ex.received, hd); err != nil {
		ep.fail(err)
		return
	}
	if e.rows > 0 {
		be.GatherRows(g.dy, moved, ex.perm, e.rows, hd)
		m.expertsBackward(b, l, e, g)
		be.ScatterRows(moved, g.dx, ex.perm, e.rows, hd)
	}
	ep.fail(ep.coll.AllToAll(moved, ex.received, dxp, ex.sent, hd))
}

// exchangeGradSpecs lists the experts' backward scratch over rows
// received rows (at least one): where the rows land and leave from, the
// recomputed activation, and the gradients, in dt (the dtype of the
// gradient of the layer's permuted rows: bf16 in a bf16 layer); the
// dy·B stay f32.
func (m *Model) exchangeGradSpecs(g *expertGrads, moved, act *kernels.Buffer, l, rows int, dt kernels.DType) bufSpecs {
	c := m.Config
	r, hd, mi := max(rows, 1), c.ExpertWidth(), c.MoEIntermediateSize
	var b bufSpecs
	b.add(moved, dt, r*hd)
	b.add(act, dt, r*mi)
	b.add(&g.dy, dt, r*hd)
	b.add(&g.dx, dt, r*hd)
	for _, dst := range []*kernels.Buffer{&g.dAct, &g.dGate, &g.dUp} {
		b.add(dst, dt, r*mi)
	}
	b.add(&g.dFused, dt, r*2*mi)
	for _, p := range []Proj{ProjGate, ProjUp, ProjDown} {
		if lr := m.expertLoRA(l, p); lr != nil {
			b.f32(&g.dyB[p], r*lr.Rank)
		}
	}
	return b
}
