package model

import "github.com/grpo-dev/grpo/kernels"

// The static decode step under expert parallelism. A decode step must
// stay one graph per device, so its exchanges cannot depend on where the
// step's tokens route: no ExchangeCounts (a host round trip) inside it.
// Instead (as vLLM's "allgather_reducescatter" all-to-all backend does
// for decode) every rank's step runs the same bucket of rows — the ranks
// agree on it before loading (sampler's lockstep) — and each sparse
// layer of the step makes two all-to-alls with counts fixed at capture:
//
//	AllToAll  every rank's bucket of the layer's input h to every rank
//	          (each rank sends its rows once per rank): the R·n rows of
//	          the group, rank after rank, on every rank;
//	          each rank routes all of them (the router is replicated, so
//	          every rank routes them alike), groups them by expert over
//	          every expert (MoEGroup) and runs only its own experts —
//	          the grouped GEMMs over its run of the offsets, on the device
//	          as a one-device step does — the other experts' rows left at
//	          zero, so their routing weights add nothing; MoECombine then
//	          gives each row the part of its output from this rank's
//	          experts;
//	AllToAll  each rank's part of every row back to the row's rank,
//	          which sums the R parts in rank order (deterministic) and
//	          adds its shared experts on its own rows.
//
// It moves R·n rows each way per layer where the prefill's exchange
// moves only the routed ones, but a decode bucket is small and the step
// needs no host wait.

// gatheredMoE is a decode bucket's workspace for the exchange: the
// static counts (n rows from and to every rank), the index that repeats
// the bucket's rows once per rank, the rows sent, gathered, the parts
// computed here and those received, and a sparse layer's set over the
// R·n gathered rows (with the experts' gate, up and x·Aᵀ, which a
// sharded model's own sets leave to the prefill's exchange).
type gatheredMoE struct {
	counts                 []int
	repeat                 kernels.Buffer // I32 R·n: 0 … n−1, R times
	send, h, partial, recv kernels.Buffer // R·n × hidden
	moe                    *moeActs
}

// epRanks is how many ranks a sharded config's experts are split over
// (1 when it holds every expert).
func (c *Config) epRanks() int {
	if !c.shardedExperts() {
		return 1
	}
	return c.NumExperts / c.held.n
}

// gatheredSpecs lists g's buffers for a bucket of n rows per rank under
// the adapter ad (the set's routing buffer is the bucket's record, put in
// place per layer as the one-device step does).
func (c *Config) gatheredSpecs(g *gatheredMoE, n int, ad *AdapterShape) bufSpecs {
	rows := c.epRanks() * n
	k, mi := c.NumExpertsPerTok, c.MoEIntermediateSize
	var sp bufSpecs
	sp.i32(&g.repeat, rows)
	for _, b := range []*kernels.Buffer{&g.send, &g.h, &g.partial, &g.recv} {
		sp.f32(b, rows*c.HiddenSize)
	}
	g.moe = &moeActs{}
	rest, kept := c.moeActSpecs(g.moe, -1, rows, ad, moeOwn{scratch: true})
	sp = append(append(sp, rest...), kept...)
	sp.f32(&g.moe.gate, rows*k*mi)
	sp.f32(&g.moe.up, rows*k*mi)
	for _, p := range []Proj{ProjGate, ProjUp, ProjDown} {
		sp.f32(&g.moe.xa[p], rows*k*ad.expertRank(-1, p))
	}
	return sp
}

// newGatheredMoE allocates a bucket's exchange workspace in a, for n
// rows per rank.
func (m *Model) newGatheredMoE(a *arena, n int, ad *AdapterShape) *gatheredMoE {
	c := m.Config
	g := &gatheredMoE{}
	c.gatheredSpecs(g, n, ad).alloc(a)
	g.moe.act = g.moe.gate // inference keeps no SwiGLU output apart
	g.moe.shared = nil     // the shared experts run on the rank's own rows
	ranks := c.epRanks()
	repeat := make([]int32, ranks*n)
	for i := range repeat {
		repeat[i] = int32(i % n)
	}
	m.Backend.UploadI32(g.repeat, repeat)
	g.counts = make([]int, ranks)
	for p := range g.counts {
		g.counts[p] = n
	}
	return g
}

// moeForwardGathered is moeForward in a static decode step under expert
// parallelism: s is the rank's own set (n rows: its bucket), whose
// experts buffer is the bucket's record of every rank's R·n rows.
func (m *Model) moeForwardGathered(b moe, a *arena, l int, s *moeActs, h, out kernels.Buffer, n int) {
	be, c, ep, g := m.Backend, m.Config, m.ep, s.gathered
	k, hd, ne, hid := c.NumExpertsPerTok, c.ExpertWidth(), c.NumExperts, c.HiddenSize
	rows := len(g.counts) * n
	first, per := m.LocalExperts()
	be.GatherRows(g.send, h, g.repeat, rows, hid)
	ep.fail(ep.coll.AllToAll(g.send, g.counts, g.h, g.counts, hid))
	gs := g.moe
	gs.experts = s.experts
	m.routerForward(l, gs, g.h, rows)
	x, sum := m.latentForwardIn(a, l, gs, g.h, g.partial, rows)
	m.route(l, gs.weights, gs.experts, gs.logits, rows, false)
	be.MoEGroup(gs.offsets, gs.tokens, gs.rows, gs.experts, rows, ne, k)
	be.GatherRows(gs.xp, x, gs.tokens, rows*k, hd)
	be.Fill(gs.yp, 0, rows*k*hd) // the other ranks' experts' rows add nothing here
	e := gs.expertRows(rows*k, per)
	e.offsets = gs.offsets.Slice(first, per+1)
	m.expertsForward(b, l, e)
	be.MoECombine(sum, gs.yp, gs.weights, gs.rows, rows, k, hd)
	m.latentForwardOut(a, l, gs, g.partial, rows)
	ep.fail(ep.coll.AllToAll(g.partial, g.counts, g.recv, g.counts, hid))
	size := n * hid
	be.Copy(out.Slice(0, size), g.recv.Slice(0, size))
	for p := 1; p < len(g.counts); p++ {
		be.Add(out, out, g.recv.Slice(p*size, size), size)
	}
	if s.shared != nil {
		m.sharedExpertForward(a, l, s.shared, h, out, n)
	}
}
