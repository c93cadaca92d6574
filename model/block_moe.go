package model

import "github.com/grpo-dev/grpo/kernels"

// moe is the mixture-of-experts MLP of a sparse layer (Qwen3-MoE's
// Qwen3MoeSparseMoeBlock, Qwen3.5-MoE's with a shared expert): a router
// picks each token's top-k experts, each expert a SwiGLU MLP run as one
// grouped GEMM over every expert's rows (moe.go), and with shared set a
// dense shared expert scaled by a sigmoid gate is added (moe_shared.go).
// Its activations are the layer's moeActs; its routing record, one
// experts buffer per sparse layer, is what a sampler records and a
// training batch replays.
//
// GLM-4.5's variant (sigmoidRouter) routes by sigmoid scores with a
// correction bias and group-limited top-k (kernels.SigmoidRouting), and
// its shared experts are added ungated (sharedGate false).
//
// gpt-oss's adds a bias to the router's logits (routerBias), to each
// expert's gate/up and down outputs (expertBias: the down bias before
// the routing weight) and activates with the clamped SwiGLU (clampedGLU,
// kernels.ClampedGLU).
//
// Nemotron-H's (relu2) has experts of up and down only, activated by
// relu², and a shared relu² MLP added ungated, with GLM-4.5's router;
// Nemotron-3-Super's (latent) runs the experts in a latent space between
// two projections (moe_latent.go).
type moe struct {
	shared, sharedGate, sigmoidRouter  bool
	routerBias, expertBias, clampedGLU bool
	relu2, latent                      bool
}

// expertInputs are the experts' projections of the layer's input: gate
// and up, or up alone for relu² experts.
func (b moe) expertInputs() []Proj {
	if b.relu2 {
		return []Proj{ProjUp}
	}
	return []Proj{ProjGate, ProjUp}
}

// relu2Experts reports whether the sparse layers' experts and shared
// expert are relu² MLPs of up and down (Nemotron-H).
func (c *Config) relu2Experts() bool { return c.Arch().Nemotron }

func (moe) sparse() bool { return true }

// loraTargets: the experts' projections (the adapter's expert LoRA) and
// the shared expert's.
func (b moe) loraTargets() []Proj {
	p := append(b.expertInputs(), ProjDown)
	if b.shared && b.relu2 {
		p = append(p, ProjSharedUp, ProjSharedDown)
	} else if b.shared {
		p = append(p, ProjSharedGate, ProjSharedUp, ProjSharedDown)
	}
	if b.sharedGate {
		p = append(p, ProjSharedScale)
	}
	if b.latent {
		p = append(p, ProjLatentIn, ProjLatentOut)
	}
	return p
}

// params: the router and every expert, the shared expert and a latent
// MoE's two projections.
func (moe) params(c *Config) int64 {
	return c.expertParams(int64(c.NumExperts)) + c.sharedExpertParams() + c.latentParams()
}

// projWeight: the shared expert's and the latent projections; the
// routed experts' are stacked (MoEWeights), no one projection's.
func (moe) projWeight(w *Layer, p Proj) kernels.Buffer {
	if sh := w.MoE.Shared; sh != nil && p >= ProjSharedGate && p <= ProjSharedScale {
		return [...]kernels.Buffer{sh.Gate, sh.Up, sh.Down, sh.Scale}[p-ProjSharedGate]
	}
	switch p {
	case ProjLatentIn:
		return w.MoE.LatentIn
	case ProjLatentOut:
		return w.MoE.LatentOut
	}
	return nil
}

func (b moe) weightSpecs(c *Config, s []tensorSpec, w *Layer, p string) []tensorSpec {
	return c.expertSpecs(s, w, p, b)
}

func (moe) weightBuffers(w *Layer) []*kernels.Buffer { return w.MoE.buffers() }

func (moe) resliceWeights(c *Config, w *Layer) { w.MoE.reslice(c) }

// normCast: none where the layer keeps the f32 norm output, which the
// experts read (their gather and router GEMM take no bf16 cast, so a
// shared cast would be written for nothing); a bf16 layer's norm stores
// its bf16 copy alone (bf16Layer: no f32 h2), which they read.
func (moe) normCast(s *layerActs) kernels.Buffer {
	if s.h2 != nil {
		return nil
	}
	return s.h2b
}

// inferenceSpecs: the one set every sparse layer shares, with its own
// experts buffer and forward scratch (each layer's routing record is
// put in place before it runs, moeActs.useRouting).
func (moe) inferenceSpecs(c *Config, s *layerActs, n int, ad *AdapterShape) (acts, experts bufSpecs) {
	s.moe = &moeActs{}
	rest, kept := c.moeActSpecs(s.moe, -1, n, ad, moeOwn{experts: true, scratch: true})
	return nil, append(rest, kept...)
}

func (moe) finishInference(m *Model, s *layerActs, n int) { m.finishMoEActs(s.moe, n) }

// loraSpecs: none beside the inference set's.
func (moe) loraSpecs(*Config, *layerActs, int, int, *AdapterShape) bufSpecs { return nil }

// trainingSpecs: none in the layer's set; the experts' are traceActs'.
func (moe) trainingSpecs(*Config, *layerActs, int, int, *AdapterShape, Recompute) bufSpecs {
	return nil
}

// droppedSpecs: none; the experts' SwiGLU and gathered inputs are
// recomputed by moeBackward under every policy.
func (moe) droppedSpecs(*Config, *layerActs, int, Recompute) bufSpecs { return nil }

func (moe) dropKept(*layerActs, Recompute) {}

func (moe) traceActs(m *Model, keep, tmp *arena, l, n int, s *layerActs, ad *AdapterShape, routing kernels.Buffer, scratch *moeScratch, replay bool, p Recompute) {
	s.moe = m.trainingMoEActs(keep, tmp, l, n, ad, routing, scratch, replay, p)
}

// traceBytes: the trace's sparse layers share one forward scratch
// (MoEScratchBytes), which is not the layer's. A checkpointed layer's
// rerun replays the kept routing (no buffer of its own, no recomputed
// top-k) and keeps everything in the backward's scratch.
func (moe) traceBytes(c *Config, l, n int, ad *AdapterShape, replay bool, attn kernels.DType) channelTraceBytes {
	var e, r moeActs
	rest, kept := c.traceMoEActSpecs(&e, l, n, ad, moeOwn{experts: true, replay: replay}, attn)
	rerunRest, rerunKept := c.traceMoEActSpecs(&r, l, n, ad, moeOwn{}, attn)
	return channelTraceBytes{rest: rest.bytes(), kept: kept.bytes(), routing: bufSpecs{c.routingSpec(&e.experts, n)}.bytes(),
		rerun: rerunRest.bytes() + rerunKept.bytes()}
}

// keepCheckpointed: the routing (the rerun replays it) and what
// newMoEActs put in the trace's arena: the replay's recomputed top-k; the
// router's logits and offsets when the model trains a router.
func (moe) keepCheckpointed(m *Model, s, k *layerActs) {
	e := s.moe
	k.moe = &moeActs{experts: e.experts, replay: e.replay, recomputed: e.recomputed}
	if m.TrainsRouter() {
		k.moe.logits, k.moe.offsets = e.logits, e.offsets
	}
}

// rerunActs: the rerun replays the experts the forward routed to (or
// replayed): on a backend whose reductions are not deterministic a
// near-tie could otherwise flip, and the backward would differentiate
// another routing than the forward's. Its fresh top-k is not wanted
// (recomputed nil).
func (moe) rerunActs(m *Model, a *arena, l, n int, s, kept *layerActs, ad *AdapterShape, scratch *moeScratch) {
	s.moe = m.newMoEActs(a, a, l, n, ad, kept.moe.experts, scratch, false)
	s.moe.replay = true
}

func (moe) gradSpecs(c *Config, g *layerGrads, l, n int, ad *AdapterShape) bufSpecs {
	return c.moeGradSpecs(&g.moe, l, n, ad)
}

// forward: the combined experts' output is o, which the next layer's
// norm (or finishLayers) adds like down_proj's.
func (b moe) forward(m *Model, a *arena, l int, s *layerActs, n int) {
	m.moeForward(b, a, l, s.moe, keptInput(s.h2, s.h2b), s.o, n)
}

func (moe) recompute(*Model, int, *layerActs, int, Recompute) {}

func (b moe) backward(tr *Trace, l int, s *layerActs, g *layerGrads, dx kernels.Buffer) kernels.Buffer {
	tr.m.moeBackward(b, l, s.moe, &g.moe, g.moe.dh2, dx, keptInput(s.h2, s.h2b), tr.dprobs, tr.n)
	return g.moe.dh2
}

// bf16Acts: the experts' rows between ops (the gathered input, the
// gate/up GEMM's output, gate, up, the activation, each row's expert
// output), the shared expert's between ops, and the backward's
// gradients of those. What stays f32: the router's logits and weights,
// the LoRA x·Aᵀ and dy·B, and dh2, into which the routed experts, the
// router and the shared expert add. A latent MoE's experts' input and
// weighted sum (moe_latent.go) and their gradients are bf16 too. Under
// expert parallelism the rows travel in bf16 and the experts' rows a rank
// receives take the layer's dtype (exchangeSpecs).
func (moe) bf16Acts(c *Config, s *layerActs, g *layerGrads) (bf16Acts, bool) {
	d := &g.moe
	bufs := []*kernels.Buffer{&d.xp, &d.act, &d.dyp, &d.dAct, &d.dGate, &d.dUp, &d.dFused, &d.dxp,
		&d.shared.dy, &d.shared.dAct, &d.shared.dGateUp, &d.dLatentIn, &d.dLatentOut}
	if s.moe != nil {
		bufs = append(bufs, s.moe.bf16Bufs()...)
	}
	return bf16Acts{bufs: bufs}, true
}

// trainingMoEActs allocates sparse layer l's mixture-of-experts
// activations for a training forward under p (ad, experts, scratch and replay
// as newMoEActs takes them). Every policy but RecomputeLayer keeps them
// all: the experts' SwiGLU and gathered inputs are recomputed by
// moeBackward whatever the policy, so swiglu and selective have nothing
// more to drop there. A checkpointed layer keeps its experts (the
// routing's buffer, in the trace already) and what newMoEActs puts in
// keep; the rest lives through the layer's forward, in tmp.
func (m *Model) trainingMoEActs(keep, tmp *arena, l, n int, ad *AdapterShape, experts kernels.Buffer, scratch *moeScratch, replay bool, p Recompute) *moeActs {
	if p == RecomputeLayer {
		s := m.newMoEActs(tmp, keep, l, n, ad, experts, scratch, replay)
		s.exchange = tmp // the rerun exchanges again
		return s
	}
	return m.newMoEActs(keep, keep, l, n, ad, experts, scratch, replay)
}
