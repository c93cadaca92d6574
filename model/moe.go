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
}

// moeScratch is a sparse layer's forward scratch.
type moeScratch struct {
	xp    kernels.Buffer // rows × hidden: the MLP input gathered per row
	act   kernels.Buffer // rows × moe_intermediate: SwiGLU's output
	fused kernels.Buffer // rows × 2·moe_intermediate: the gate/up GEMM's output
}

// newMoEScratch allocates the scratch of n tokens' permuted rows; act
// aliases gate when nil (inference, which keeps no gate).
func (m *Model) newMoEScratch(a *arena, n int, withAct bool) *moeScratch {
	s := &moeScratch{}
	m.Config.moeScratchSpecs(s, n, withAct).alloc(a)
	return s
}

// moeScratchSpecs lists the scratch of n tokens' permuted rows: the
// gathered input, the gate/up GEMM's output and (withAct) SwiGLU's.
func (c *Config) moeScratchSpecs(s *moeScratch, n int, withAct bool) bufSpecs {
	rows := n * c.NumExpertsPerTok
	var b bufSpecs
	b.f32(&s.xp, rows*c.HiddenSize)
	b.f32(&s.fused, rows*2*c.MoEIntermediateSize)
	if withAct {
		b.f32(&s.act, rows*c.MoEIntermediateSize)
	}
	return b
}

// newMoEActs allocates one set for n tokens of layer l (l < 0: a set for
// every sparse layer, for inference); experts, when not nil, is the
// layer's experts buffer, holding a recorded routing when replay is set;
// scratch, when not nil, is the forward scratch a training trace's sparse
// layers share. keep receives what the trace of a checkpointed layer
// (RecomputeLayer) holds beside its experts: under replay the recomputed
// top-k, which the mismatch metric reads after the forward, and when the
// model trains a router its logits and the grouping's offsets, which the
// load-balancing loss reads before the backward reruns the layer; a gets
// the rest (keep is a when the trace keeps everything).
func (m *Model) newMoEActs(a, keep *arena, l, n int, experts kernels.Buffer, scratch *moeScratch, replay bool) *moeActs {
	s := &moeActs{experts: experts, replay: replay}
	if scratch != nil {
		s.moeScratch = *scratch
	}
	ad := m.adapterShape()
	rest, kept := m.Config.moeActSpecs(s, l, n, &ad, moeOwn{experts: experts == nil, scratch: scratch == nil, replay: replay})
	rest.alloc(a)
	kept.alloc(keep)
	if s.act == nil {
		s.act = s.gate
	}
	if s.shared != nil {
		m.initSharedExpertActs(s.shared, n)
	}
	return s
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
// set.
func (c *Config) moeActSpecs(s *moeActs, l, n int, ad *AdapterShape, own moeOwn) (rest, kept bufSpecs) {
	k, h, mi, ne := c.NumExpertsPerTok, c.HiddenSize, c.MoEIntermediateSize, c.NumExperts
	rows := n * k
	router := &rest
	if ad.TrainsRouter() {
		router = &kept
	}
	router.f32(&s.logits, n*ne)
	rest.f32(&s.weights, n*k)
	router.i32(&s.offsets, ne+1)
	rest.i32(&s.tokens, rows)
	rest.i32(&s.rows, rows)
	rest.f32(&s.gate, rows*mi)
	rest.f32(&s.up, rows*mi)
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
		rest.f32(&s.xa[p], rows*ad.expertRank(l, p))
	}
	rest.f32(&s.routerXA, n*ad.routerRank(l))
	if c.SharedExpertIntermediateSize > 0 {
		s.shared = &sharedExpertActs{}
		rest = append(rest, c.sharedExpertSpecs(s.shared, l, n, ad)...)
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
func (m *Model) moeForward(a *arena, l int, s *moeActs, h, out kernels.Buffer, n int) {
	replay := s.replay
	be, c, w := m.Backend, m.Config, m.W.Layers[l].MoE
	k, hd, mi, ne, norm := c.NumExpertsPerTok, c.HiddenSize, c.MoEIntermediateSize, c.NumExperts, c.NormTopKProb
	rows := n * k
	m.routerForward(l, s, h, n)
	if replay && s.recomputed != nil {
		be.MoERoute(s.weights, s.recomputed, s.logits, n, ne, k, norm, false)
	}
	be.MoERoute(s.weights, s.experts, s.logits, n, ne, k, norm, replay)
	be.MoEGroup(s.offsets, s.tokens, s.rows, s.experts, n, ne, k)
	be.GatherRows(s.xp, h, s.tokens, rows, hd)
	be.GroupedMatMul(s.fused, s.xp, w.GateUp, s.offsets, rows, ne, 2*mi, hd, true, 1, 0)
	be.CopyColumns(s.gate, s.fused, rows, mi, mi, 0, 2*mi, 0)
	be.CopyColumns(s.up, s.fused, rows, mi, mi, 0, 2*mi, mi)
	for _, p := range []Proj{ProjGate, ProjUp} {
		if lr := m.expertLoRA(l, p); lr != nil {
			dst := s.gate
			if p == ProjUp {
				dst = s.up
			}
			m.expertProject(lr, p, dst, s.xp, s.xa[p], s.offsets, rows)
		}
	}
	be.SwiGLU(s.act, s.gate, s.up, rows*mi)
	be.GroupedMatMul(s.yp, s.act, w.Down, s.offsets, rows, ne, hd, mi, true, 1, 0)
	if lr := m.expertLoRA(l, ProjDown); lr != nil {
		m.expertProject(lr, ProjDown, s.yp, s.act, s.xa[ProjDown], s.offsets, rows)
	}
	be.MoECombine(out, s.yp, s.weights, s.rows, n, k, hd)
	if s.shared != nil {
		m.sharedExpertForward(a, l, s.shared, h, out, n)
	}
}

// moeBackward turns dout (n × hidden), the gradient of the sparse MLP's
// output, into dh, the gradient of its input h (overwritten), adding the
// expert adapters' gradients. The routing weights carry gradient back to
// dh through the router: dh += dlogits·Router (+ its adapter's part, whose
// gradients it adds too). dprobs, when not nil, is the load-balancing
// loss's gradient with respect to every token's router probabilities.
func (m *Model) moeBackward(a *arena, l int, s *moeActs, dh, dout, h, dprobs kernels.Buffer, n int) {
	be, c, w := m.Backend, m.Config, m.W.Layers[l].MoE
	k, hd, mi, ne, norm := c.NumExpertsPerTok, c.HiddenSize, c.MoEIntermediateSize, c.NumExperts, c.NormTopKProb
	rows := n * k
	f := func(size int) kernels.Buffer { return a.alloc(kernels.F32, size) }
	// The forward's scratch, recomputed: the gathered input and SwiGLU.
	xp, act := f(rows*hd), f(rows*mi)
	be.GatherRows(xp, h, s.tokens, rows, hd)
	be.SwiGLU(act, s.gate, s.up, rows*mi)
	dyp, dw := f(rows*hd), f(rows)
	be.MoECombineBackward(dyp, dw, dout, s.yp, s.weights, s.rows, n, k, hd)
	dAct := f(rows * mi)
	be.GroupedMatMul(dAct, dyp, w.Down, s.offsets, rows, ne, mi, hd, false, 1, 0)
	if lr := m.expertLoRA(l, ProjDown); lr != nil {
		m.expertProjectBackward(a, lr, ProjDown, dAct, dyp, act, s.xa[ProjDown], s.offsets, rows)
	}
	dGate, dUp := f(rows*mi), f(rows*mi)
	be.SwiGLUBackward(dGate, dUp, dAct, s.gate, s.up, rows*mi)
	dFused := f(rows * 2 * mi)
	be.CopyColumns(dFused, dGate, rows, mi, 2*mi, 0, mi, 0)
	be.CopyColumns(dFused, dUp, rows, mi, 2*mi, mi, mi, 0)
	dxp := f(rows * hd)
	be.GroupedMatMul(dxp, dFused, w.GateUp, s.offsets, rows, ne, hd, 2*mi, false, 1, 0)
	for _, p := range []Proj{ProjGate, ProjUp} {
		if lr := m.expertLoRA(l, p); lr != nil {
			dy := dGate
			if p == ProjUp {
				dy = dUp
			}
			m.expertProjectBackward(a, lr, p, dxp, dy, xp, s.xa[p], s.offsets, rows)
		}
	}
	be.MoECombine(dh, dxp, nil, s.rows, n, k, hd)
	dLogits := f(n * ne)
	be.MoERouteBackward(dLogits, dw, dprobs, s.logits, s.experts, n, ne, k, norm)
	m.routerBackward(a, l, s, dh, dLogits, h, n)
	if s.shared != nil {
		m.sharedExpertBackward(a, l, s.shared, dh, dout, h, n)
	}
}
