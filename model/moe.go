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
	c := m.Config
	rows := n * c.NumExpertsPerTok
	s := &moeScratch{xp: a.alloc(kernels.F32, rows*c.HiddenSize), fused: a.alloc(kernels.F32, rows*2*c.MoEIntermediateSize)}
	if withAct {
		s.act = a.alloc(kernels.F32, rows*c.MoEIntermediateSize)
	}
	return s
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
	c := m.Config
	k, h, mi, ne := c.NumExpertsPerTok, c.HiddenSize, c.MoEIntermediateSize, c.NumExperts
	rows := n * k
	f := func(size int) kernels.Buffer { return a.alloc(kernels.F32, size) }
	router := a
	if m.TrainsRouter() {
		router = keep
	}
	s := &moeActs{logits: router.alloc(kernels.F32, n*ne), weights: f(n * k), experts: experts,
		offsets: router.alloc(kernels.I32, ne+1), tokens: a.alloc(kernels.I32, rows), rows: a.alloc(kernels.I32, rows),
		gate: f(rows * mi), up: f(rows * mi), yp: f(rows * h)}
	if scratch == nil {
		scratch = m.newMoEScratch(a, n, false)
	}
	s.moeScratch = *scratch
	if s.act == nil {
		s.act = s.gate
	}
	s.useRouting(keep, experts, replay)
	for _, p := range []Proj{ProjGate, ProjUp, ProjDown} {
		if r := m.expertRank(l, p); r > 0 {
			s.xa[p] = f(rows * r)
		}
	}
	if r := m.routerRank(l); r > 0 {
		s.routerXA = f(n * r)
	}
	if c.SharedExpertIntermediateSize > 0 {
		s.shared = m.newSharedExpertActs(a, l, n)
	}
	return s
}

// expertRank is the rank of layer l's expert adapter of p, or with l < 0
// the largest over the sparse layers (the inference set serves them all).
func (m *Model) expertRank(l int, p Proj) int {
	r := 0
	for i := range m.Config.NumLayers {
		if (l < 0 || i == l) && m.Config.IsSparse(i) {
			if lr := m.expertLoRA(i, p); lr != nil {
				r = max(r, lr.Rank)
			}
		}
	}
	return r
}

// useRouting makes experts (a.alloc'd when nil) the layer's experts
// buffer, holding a recorded routing when replay is set.
func (s *moeActs) useRouting(a *arena, experts kernels.Buffer, replay bool) {
	if experts == nil {
		experts = a.alloc(kernels.I32, s.tokens.Len())
	}
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
