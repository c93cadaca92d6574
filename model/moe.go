package model

import "github.com/grpo-dev/grpo/kernels"

// The mixture-of-experts MLP of a sparse Qwen3-MoE layer, as HF's
// Qwen3MoeSparseMoeBlock computes it:
//
//	logits = h·Routerᵀ; p = softmax(logits) in f32; top-k of p (weights
//	renormalised over the k when norm_topk_prob);
//	out[t] = Σ_j w_tj · down_e(silu(gate_e(h_t)) ⊙ up_e(h_t)), e = expert j of t
//
// Tokens are grouped by expert on the device (MoEGroup), each projection
// is one grouped GEMM over every expert's rows, and MoECombine sums each
// token's k outputs with its routing weights. A "row" below is a permuted
// row: one (token, choice) assignment, n·k of them.

// moeActs are a sparse layer's activations: one set per layer in
// training, kept for the backward; one set shared by every layer for
// inference (experts excepted: each layer keeps its own, so a sampler can
// record them).
type moeActs struct {
	logits, weights kernels.Buffer // router logits n × nExperts; routing weights n × k
	experts         kernels.Buffer // n × k (I32): routed, or replayed
	replay          bool           // experts holds a recorded routing
	recomputed      kernels.Buffer // n × k (I32): top-k recomputed under replay, for the metric (nil: not recomputed)
	offsets         kernels.Buffer // nExperts + 1 (I32)
	tokens, rows    kernels.Buffer // n·k (I32) each
	gate, up        kernels.Buffer // rows × moe_intermediate
	yp              kernels.Buffer // rows × hidden: each row's expert output
	// moeScratch holds what the forward needs only while it runs: a
	// training trace shares one set among its sparse layers, and the
	// backward recomputes xp and act (a gather and a SwiGLU) rather than
	// keep 2·k·hidden + k·moe_intermediate floats per token per layer.
	moeScratch
	xa       [NumProj]kernels.Buffer
	routerXA kernels.Buffer // n × rank: h·Aᵀ of the router's adapter
	// shared is the shared expert's activations (Qwen3.5-MoE); nil
	// without one.
	shared *sharedExpertActs
	// ep is what the forward exchanged under expert parallelism, where
	// the experts' gate, up and x·Aᵀ live (this rank's experts' rows,
	// not the layer's own); nil on one device.
	ep *expertExchange
	// exchange is the arena ep's buffers go into when it is not the
	// forward's: a checkpointed layer's own, whose backward reruns the
	// forward, exchange and all.
	exchange *arena
	// latentIn and latentOut are a latent MoE's expert input and
	// weighted sum (n × latent, moe_latent.go); nil without one.
	latentIn, latentOut kernels.Buffer
	// gathered is a static decode step's exchange under expert
	// parallelism (decode_ep.go); nil elsewhere.
	gathered *gatheredMoE
}

// moeScratch is a sparse layer's forward scratch.
type moeScratch struct {
	xp    kernels.Buffer // rows × hidden: the MLP input gathered per row
	act   kernels.Buffer // rows × moe_intermediate: SwiGLU's output
	fused kernels.Buffer // rows × 2·moe_intermediate: the gate/up GEMM's output
}

// newMoEScratch allocates the scratch a training trace's sparse layers
// share for n tokens' permuted rows (traceMoEScratchSpecs).
func (m *Model) newMoEScratch(a *arena, n int) *moeScratch {
	s := &moeScratch{}
	m.Config.traceMoEScratchSpecs(s, n, m.traceAttention()).alloc(a)
	return s
}

// traceMoEScratchSpecs lists the scratch a trace in attn shares among its
// sparse layers, SwiGLU's output included: in bf16 when they are bf16
// layers (they are all of one kind, so the first decides).
func (c *Config) traceMoEScratchSpecs(s *moeScratch, n int, attn kernels.DType) bufSpecs {
	b := c.moeScratchSpecs(s, n, true)
	for l := range c.NumLayers {
		if c.IsSparse(l) {
			if c.isBF16Layer(l, attn) {
				return b.inBF16(bf16Acts{bufs: s.bf16Bufs()})
			}
			break
		}
	}
	return b
}

// bf16Bufs are the scratch's buffers between ops, which a bf16 layer's
// set holds in bf16 (moe.bf16Acts).
func (s *moeScratch) bf16Bufs() []*kernels.Buffer { return []*kernels.Buffer{&s.xp, &s.act, &s.fused} }

// bf16Bufs are the set's buffers between ops, its scratch's and its
// shared expert's included, which a bf16 layer holds in bf16.
func (s *moeActs) bf16Bufs() []*kernels.Buffer {
	b := append(s.moeScratch.bf16Bufs(), &s.gate, &s.up, &s.yp, &s.latentIn, &s.latentOut)
	if sh := s.shared; sh != nil {
		b = append(b, &sh.gateUp, &sh.act, &sh.y, &sh.scaled)
	}
	return b
}

// moeScratchSpecs lists the scratch of n tokens' permuted rows: the
// gathered input, the gate/up GEMM's output and (withAct) SwiGLU's.
func (c *Config) moeScratchSpecs(s *moeScratch, n int, withAct bool) bufSpecs {
	rows := n * c.NumExpertsPerTok
	var b bufSpecs
	b.f32(&s.xp, rows*c.ExpertWidth())
	b.f32(&s.fused, rows*2*c.MoEIntermediateSize)
	if withAct {
		b.f32(&s.act, rows*c.MoEIntermediateSize)
	}
	return b
}

// newMoEActs allocates one set for n tokens of layer l (l < 0: a set for
// every sparse layer, for inference) under the adapter ad; experts, when not nil, is the
// layer's experts buffer, holding a recorded routing when replay is set;
// scratch, when not nil, is the forward scratch a training trace's sparse
// layers share. keep receives what the trace of a checkpointed layer
// (RecomputeLayer) holds beside its experts: under replay the recomputed
// top-k, which the mismatch metric reads after the forward, and when the
// model trains a router its logits and the grouping's offsets, which the
// load-balancing loss reads before the backward reruns the layer; a gets
// the rest (keep is a when the trace keeps everything).
func (m *Model) newMoEActs(a, keep *arena, l, n int, ad *AdapterShape, experts kernels.Buffer, scratch *moeScratch, replay bool) *moeActs {
	s := &moeActs{experts: experts, replay: replay}
	if scratch != nil {
		s.moeScratch = *scratch
	}
	rest, kept := m.Config.traceMoEActSpecs(s, l, n, ad, moeOwn{experts: experts == nil, scratch: scratch == nil, replay: replay}, m.traceAttention())
	rest.alloc(a)
	kept.alloc(keep)
	m.finishMoEActs(s, n)
	return s
}

// finishMoEActs completes a new set: act is gate's buffer when the set
// keeps no SwiGLU output of its own (inference), and the shared expert's
// constants are filled in.
func (m *Model) finishMoEActs(s *moeActs, n int) {
	if s.act == nil {
		s.act = s.gate
	}
	if s.shared != nil {
		m.initSharedExpertActs(s.shared, n)
	}
}

// moeOwn says what a sparse layer's set allocates beside its own
// buffers: its experts buffer (a training trace allocates every sparse
// layer's up front, newRouting), the forward scratch (a trace shares one)
// and under replay the recomputed top-k.
type moeOwn struct{ experts, scratch, replay bool }

// moeActSpecs lists sparse layer l's set for n tokens (newMoEActs), the
// part a checkpointed layer's trace keeps apart (kept): per token the
// router's logits (and its adapter's x·Aᵀ) and the routing weights; per
// permuted row the grouping's tokens and rows, gate, up, the experts'
// output and each adapted expert projection's x·Aᵀ; the grouping's
// offsets; the experts buffer and the forward scratch when the set owns
// them (own), the recomputed top-k under replay; and the shared expert's
// set. An expert-parallel rank's (shardedExperts) has no gate, up or
// expert x·Aᵀ: the exchange holds those of the rows it receives.
func (c *Config) moeActSpecs(s *moeActs, l, n int, ad *AdapterShape, own moeOwn) (rest, kept bufSpecs) {
	k, h, mi, ne := c.NumExpertsPerTok, c.ExpertWidth(), c.MoEIntermediateSize, c.NumExperts
	rows, ep := n*k, c.shardedExperts()
	router := &rest
	if ad.TrainsRouter() {
		router = &kept
	}
	router.f32(&s.logits, n*ne)
	rest.f32(&s.weights, n*k)
	router.i32(&s.offsets, ne+1)
	rest.i32(&s.tokens, rows)
	rest.i32(&s.rows, rows)
	if !ep {
		rest.f32(&s.gate, rows*mi)
		rest.f32(&s.up, rows*mi)
	}
	rest.f32(&s.yp, rows*h)
	if own.scratch {
		rest = append(rest, c.moeScratchSpecs(&s.moeScratch, n, false)...)
	}
	if own.experts {
		kept = append(kept, c.routingSpec(&s.experts, n))
	}
	if own.replay {
		kept.i32(&s.recomputed, rows)
	}
	for _, p := range []Proj{ProjGate, ProjUp, ProjDown} {
		if !ep {
			rest.f32(&s.xa[p], rows*ad.expertRank(l, p))
		}
	}
	rest.f32(&s.routerXA, n*ad.routerRank(l))
	rest = append(rest, c.latentActSpecs(s, l, n, ad)...)
	if c.SharedExpertIntermediateSize > 0 {
		s.shared = &sharedExpertActs{}
		rest = append(rest, c.sharedExpertSpecs(s.shared, l, n, ad)...)
	}
	return rest, kept
}

// traceMoEActSpecs is moeActSpecs for sparse layer l of a trace in attn:
// a bf16 layer's buffers between ops in bf16 (moe.bf16Acts).
func (c *Config) traceMoEActSpecs(s *moeActs, l, n int, ad *AdapterShape, own moeOwn, attn kernels.DType) (rest, kept bufSpecs) {
	rest, kept = c.moeActSpecs(s, l, n, ad, own)
	if t, ok := c.bf16Layer(l, attn, &layerActs{moe: s}, &layerGrads{}); ok {
		return rest.inBF16(t), kept.inBF16(t)
	}
	return rest, kept
}

// useRouting makes experts the shared inference set's experts buffer
// for the layer it runs next, holding a recorded routing when replay is
// set (then the recomputed top-k gets a buffer of a, once).
func (s *moeActs) useRouting(a *arena, experts kernels.Buffer, replay bool) {
	s.experts, s.replay = experts, replay
	if replay && s.recomputed == nil {
		s.recomputed = a.alloc(kernels.I32, s.tokens.Len())
	}
}

// moeForward writes the sparse MLP of layer l applied to h (n × hidden)
// into out. Under replay, s.experts holds the recorded experts and only
// the weights are recomputed (and the fresh top-k goes to s.recomputed,
// when there is one: a checkpointed layer's rerun replays its forward's
// experts without).
func (m *Model) moeForward(b moe, a *arena, l int, s *moeActs, h, out kernels.Buffer, n int) {
	if s.gathered != nil {
		m.moeForwardGathered(b, a, l, s, h, out, n)
		return
	}
	replay := s.replay
	be, c := m.Backend, m.Config
	k, hd, ne := c.NumExpertsPerTok, c.ExpertWidth(), c.NumExperts
	rows := n * k
	m.routerForward(l, s, h, n)
	x, sum := m.latentForwardIn(a, l, s, h, out, n)
	if replay && s.recomputed != nil {
		m.route(l, s.weights, s.recomputed, s.logits, n, false)
	}
	m.route(l, s.weights, s.experts, s.logits, n, replay)
	be.MoEGroup(s.offsets, s.tokens, s.rows, s.experts, n, ne, k)
	be.GatherRows(s.xp, x, s.tokens, rows, hd)
	if m.ep != nil {
		m.expertsExchanged(b, a, l, s, rows)
	} else {
		m.expertsForward(b, l, s.expertRows(rows, ne))
	}
	be.MoECombine(sum, s.yp, s.weights, s.rows, n, k, hd)
	m.latentForwardOut(a, l, s, out, n)
	if s.shared != nil {
		m.sharedExpertForward(a, l, s.shared, h, out, n)
	}
}

// moeGrads is a sparse MLP's backward scratch: the gradient of its input
// h2 (layerBackward's), the forward scratch recomputed (the gathered
// input and SwiGLU), the gradients of the experts' outputs and routing
// weights, of SwiGLU's output and inputs, of the gate/up GEMM's output
// and of the gathered input, of the router's logits, dy·B of each adapted
// expert projection and of the router's adapter, and the shared expert's.
type moeGrads struct {
	dh2, xp, act       kernels.Buffer
	dyp, dw            kernels.Buffer
	dAct, dGate, dUp   kernels.Buffer
	dFused, dxp        kernels.Buffer
	dLogits, routerDyB kernels.Buffer
	dyB                [NumProj]kernels.Buffer
	shared             sharedExpertGrads
	// dLatentIn and dLatentOut are the gradients of a latent MoE's
	// expert input and weighted sum (moe_latent.go).
	dLatentIn, dLatentOut kernels.Buffer
}

// expertGrads are g's buffers for the experts' backward over the layer's
// own permuted rows.
func (g *moeGrads) expertGrads() expertGrads {
	return expertGrads{dy: g.dyp, dx: g.dxp, dAct: g.dAct, dGate: g.dGate, dUp: g.dUp, dFused: g.dFused, dyB: g.dyB}
}

// moeGradSpecs lists sparse layer l's MLP backward scratch for n tokens;
// an expert-parallel rank's (shardedExperts) leaves out the experts'
// backward, which the exchange runs over the rows it received.
func (c *Config) moeGradSpecs(g *moeGrads, l, n int, ad *AdapterShape) bufSpecs {
	k, hd, mi, ne := c.NumExpertsPerTok, c.ExpertWidth(), c.MoEIntermediateSize, c.NumExperts
	rows := n * k
	var b bufSpecs
	b.f32(&g.dh2, n*c.HiddenSize)
	b.f32(&g.dyp, rows*hd)
	b.f32(&g.dw, rows)
	b.f32(&g.dxp, rows*hd)
	b.f32(&g.dLogits, n*ne)
	if !c.shardedExperts() {
		b.f32(&g.xp, rows*hd)
		b.f32(&g.act, rows*mi)
		for _, dst := range []*kernels.Buffer{&g.dAct, &g.dGate, &g.dUp} {
			b.f32(dst, rows*mi)
		}
		b.f32(&g.dFused, rows*2*mi)
		for _, p := range []Proj{ProjGate, ProjUp, ProjDown} {
			b.f32(&g.dyB[p], rows*ad.expertRank(l, p))
		}
	}
	b.f32(&g.routerDyB, n*ad.routerRank(l))
	b = append(b, c.latentGradSpecs(g, l, n, ad)...)
	if c.SharedExpertIntermediateSize > 0 {
		b = append(b, c.sharedExpertGradSpecs(&g.shared, l, n, ad)...)
	}
	return b
}

// moeBackward turns dout (n × hidden), the gradient of the sparse MLP's
// output, into dh, the gradient of its input h (overwritten), adding the
// expert adapters' gradients, with g as scratch. The routing weights
// carry gradient back to dh through the router: dh += dlogits·Router (+
// its adapter's part, whose gradients it adds too). dprobs, when not nil,
// is the load-balancing loss's gradient with respect to every token's
// router probabilities.
func (m *Model) moeBackward(b moe, l int, s *moeActs, g *moeGrads, dh, dout, h, dprobs kernels.Buffer, n int) {
	be, c := m.Backend, m.Config
	k, hd, ne, norm := c.NumExpertsPerTok, c.ExpertWidth(), c.NumExperts, c.NormTopKProb
	rows := n * k
	dsum, x, dx := m.latentBackwardOut(l, s, g, dh, dout, h, n)
	be.MoECombineBackward(g.dyp, g.dw, dsum, s.yp, s.weights, s.rows, n, k, hd)
	if m.ep != nil {
		m.expertsBackwardExchanged(b, l, s, g.dyp, g.dxp)
	} else {
		// The forward's scratch, recomputed: the gathered input (SwiGLU's
		// output is, by expertsBackward).
		be.GatherRows(g.xp, x, s.tokens, rows, hd)
		e := s.expertRows(rows, ne)
		e.x, e.act = g.xp, g.act
		m.expertsBackward(b, l, e, g.expertGrads())
	}
	be.MoECombine(dx, g.dxp, nil, s.rows, n, k, hd)
	m.latentBackwardIn(l, s, g, dh, h, n)
	if c.Arch().SigmoidRouter {
		be.MoERouteSigmoidBackward(g.dLogits, g.dw, s.logits, s.experts, n, ne, k, c.SigmoidRouting())
	} else {
		be.MoERouteBackward(g.dLogits, g.dw, dprobs, s.logits, s.experts, n, ne, k, norm)
	}
	m.routerBackward(l, s, dh, g.dLogits, h, g.routerDyB, n)
	if s.shared != nil {
		m.sharedExpertBackward(l, s.shared, &g.shared, dh, dout, h, n)
	}
}

// route writes the routing weights (and, unless replay, the experts) of
// n tokens from their router logits: softmax top-k, or GLM-4.5's sigmoid
// routing with layer l's correction bias.
func (m *Model) route(l int, weights, experts, logits kernels.Buffer, n int, replay bool) {
	c := m.Config
	if c.Arch().SigmoidRouter {
		m.Backend.MoERouteSigmoid(weights, experts, logits, m.W.Layers[l].MoE.RouterBias, n, c.NumExperts, c.NumExpertsPerTok,
			c.SigmoidRouting(), replay)
		return
	}
	m.Backend.MoERoute(weights, experts, logits, n, c.NumExperts, c.NumExpertsPerTok, c.NormTopKProb, replay)
}

// expertActivation writes the experts' activation of their gate and up
// outputs (n values): SwiGLU, or gpt-oss's clamped SwiGLU.
func (m *Model) expertActivation(b moe, act, gate, up kernels.Buffer, n int) {
	if b.relu2 {
		m.Backend.ReLU2(act, up, n)
		return
	}
	if b.clampedGLU {
		m.Backend.ClampedSwiGLU(act, gate, up, n, m.Config.ClampedGLU())
		return
	}
	m.Backend.SwiGLU(act, gate, up, n)
}
