package model

import "github.com/grpo-dev/grpo/kernels"

// layerActs are one decoder layer's activations: the residual stream and
// norms', and each block's (block.go: a block's specs fill its own
// fields; attention's q … lse, SwiGLU's gateUp and act, a DeltaNet's in
// linear, the experts' in moe). For inference a single set is reused by
// every layer and the residual stream is updated in place (xIn, xMid and
// xOut are one buffer; statistics are not kept). For training each layer
// has its own set, keeping what its backward needs.
type layerActs struct {
	xIn, xMid, xOut kernels.Buffer // residual stream: n × hidden
	h1, h2          kernels.Buffer // normed inputs of attention and MLP
	rstd1, rstd2    kernels.Buffer // per-row 1/rms of the two norms (training)
	qPre, kPre      kernels.Buffer // q and k before the Qwen3 q/k norm (training; nil otherwise)
	rstdQ, rstdK    kernels.Buffer // per-head 1/rms of the q/k norm (training)
	q               kernels.Buffer // after norm and RoPE; k and v go straight to the cache
	// gate is the output gate's pre-activation (n × q, the second half
	// of each gated q_proj head) in a model with Arch.OutputGate, and
	// gated attn × sigmoid(gate), o_proj's input (attn itself for
	// inference, which keeps no pre-gate output); nil otherwise.
	gate, gated kernels.Buffer
	attn, lse   kernels.Buffer // attention output (o_proj input) and its log-sum-exp
	o           kernels.Buffer // o_proj / down_proj output
	// gateUp is the gate/up GEMM's output, n × 2·inter (gate | up per
	// row), which SwiGLURows reads in place; act is its output.
	gateUp, act kernels.Buffer
	// fused receives the q/k/v GEMM, n × (q + 2kv), which AttentionInputs
	// reads in place: one buffer shared by every layer (training keeps it
	// in the trace rather than allocating it per GEMM, so the peak does
	// not depend on where in the pass a scratch lives).
	fused kernels.Buffer
	// h1b, h2b and actb are the bf16 casts of h1, h2 and act that the
	// fused ops write for GEMMs with bf16 weights on backends that round
	// a GEMM's A to bf16 anyway (Description.BF16GEMM); nil elsewhere.
	// Shared by every layer: only the GEMMs read them.
	h1b, h2b, actb kernels.Buffer
	xa             [NumProj]kernels.Buffer   // x·Aᵀ (n × rank) of o_proj and down_proj, for the backward
	xaG            [numGroups]kernels.Buffer // x·Aᵀ (n × Σ ranks) of the q/k/v and gate/up groups
	// moe is the mixture-of-experts MLP's activations in a sparse layer
	// (the dense gateUp and act are nil then).
	moe *moeActs
	// linear is a gated DeltaNet layer's token-mixer activations (the
	// attention ones are unused then); nil for a model without such layers.
	linear *deltaNetActs
	// mamba is a Mamba-2 layer's token-mixer activations; nil for a model
	// without such layers.
	mamba *mambaActs
}

// FusedWidth is the widest group's fused output: the width of the one
// buffer inference's fused q/k/v and gate/up GEMMs write (inferenceActs),
// which the estimate sizes by.
func (c *Config) FusedWidth() int { return max(c.QKVWidth(), c.groupWidth(groupGateUp)) }

// QKVWidth is the fused q/k/v GEMM's output width: the trace's one shared
// buffer in training (sharedTrainingActs), where gate/up writes each
// layer's own gateUp.
func (c *Config) QKVWidth() int { return c.groupWidth(groupQKV) }

// castsBF16 reports whether the fused ops should write bf16 casts for the
// GEMMs: the weights are bf16 and the backend's GEMM would round its A to
// bf16 itself (so the cast changes nothing but the launches).
func (m *Model) castsBF16() bool {
	if !m.Backend.Describe().BF16GEMM {
		return false
	}
	for l := range m.W.Layers {
		// The first token mixer's (a layer may have none: Nemotron-H's).
		if w := m.layer(l).mixer.gemmWeight(&m.W.Layers[l]); w != nil {
			return w.DType() == kernels.BF16
		}
	}
	return false
}

// castSpecs lists the bf16 casts of n tokens: h1b, actb, and h2b unless
// it is h1b's buffer (the two norms share one output: inference).
func (c *Config) castSpecs(s *layerActs, n int, shareNorms bool) bufSpecs {
	var b bufSpecs
	b.add(&s.h1b, kernels.BF16, n*c.HiddenSize)
	b.add(&s.actb, kernels.BF16, n*c.IntermediateSize)
	if !shareNorms {
		b.add(&s.h2b, kernels.BF16, n*c.HiddenSize)
	}
	return b
}

// inferenceActs allocates the one reusable set of activations
// (inferenceActSpecs) of a forward whose attention is in attn
// (forwardAttention; F32 for the static decode step), with x as the
// residual stream.
func (m *Model) inferenceActs(a *arena, x kernels.Buffer, n int, attn kernels.DType) *layerActs {
	ad := m.adapterShape()
	s := &layerActs{xIn: x, xMid: x, xOut: x}
	acts, moe := m.Config.inferenceActSpecs(s, n, &ad, m.castsBF16(), attn)
	acts.alloc(a)
	moe.alloc(a)
	// One norm output serves both norms; each block kind makes its own
	// aliases (the fused output serving gate/up's GEMM too, the gated
	// attention output being attn itself, …).
	s.h2, s.h2b = s.h1, s.h1b
	mixers, channels := m.Config.blockKinds()
	for _, b := range mixers {
		b.finishInference(s)
	}
	for _, b := range channels {
		b.finishInference(m, s, n)
	}
	return s
}

// inferenceActSpecs lists the inference set of n tokens under the
// adapter ad (casts: with the bf16 casts of the GEMMs' inputs, unless
// every layer keeps its activations in bf16 in attn: inferenceBF16): the
// normed input, the blocks' output, the fused GEMMs' output
// (FusedWidth), and each block kind's set (attention's q and output,
// SwiGLU's output, a DeltaNet layer's set, …); and apart (moe) a sparse
// layer's set, with its own experts buffer and forward scratch. One set
// serves every layer, so each kind the architecture uses adds its part
// once.
func (c *Config) inferenceActSpecs(s *layerActs, n int, ad *AdapterShape, casts bool, attn kernels.DType) (acts, moe bufSpecs) {
	h := c.HiddenSize
	acts.f32(&s.h1, n*h)
	acts.f32(&s.o, n*h)
	acts.f32(&s.fused, n*c.FusedWidth())
	if casts && !c.allBF16Layers(attn) {
		acts = append(acts, c.castSpecs(s, n, true)...)
	}
	mixers, channels := c.blockKinds()
	for _, b := range mixers {
		acts = append(acts, b.inferenceSpecs(c, s, n, ad)...)
	}
	for _, b := range channels {
		a, e := b.inferenceSpecs(c, s, n, ad)
		acts, moe = append(acts, a...), append(moe, e...)
	}
	return c.inferenceBF16(acts, s, attn), c.inferenceBF16(moe, s, attn)
}

// sharedTrainingActs allocates what every layer of a training forward
// shares (sharedTrainingSpecs).
func (m *Model) sharedTrainingActs(a *arena, n int) *layerActs {
	s := &layerActs{}
	m.Config.sharedTrainingSpecs(s, n, m.castsBF16(), m.traceAttention()).alloc(a)
	return s
}

// sharedTrainingSpecs lists what every layer of a training forward of n
// tokens in attn (TraceAttentionDType) shares: the q/k/v GEMM's output
// (fusedDType) and, with casts, the bf16 casts, unless every layer keeps
// its own (a bf16 layer's, bf16Layer).
func (c *Config) sharedTrainingSpecs(s *layerActs, n int, casts bool, attn kernels.DType) bufSpecs {
	var b bufSpecs
	b.add(&s.fused, c.fusedDType(attn), n*c.groupWidth(groupQKV))
	if casts && !c.allBF16Layers(attn) {
		b = append(b, c.castSpecs(s, n, false)...)
	}
	return b
}

// trainingActs allocates a layer's own activations for the backward pass
// (trainingActSpecs); shared holds the trace's buffers that every layer
// uses (sharedTrainingActs); ad is the adapter's shape (Trace.ad). The
// ones that drop recomputes in the backward (SwiGLU's output; attention's
// output and log-sum-exp) are left nil for the caller (recompute.go).
func (m *Model) trainingActs(a *arena, l int, xIn kernels.Buffer, shared *layerActs, n int, ad *AdapterShape, drop Recompute) *layerActs {
	c := m.Config
	s := &layerActs{xIn: xIn, fused: shared.fused, h1b: shared.h1b, h2b: shared.h2b, actb: shared.actb}
	c.trainingActSpecs(s, l, n, ad, drop, m.traceAttention()).alloc(a)
	if d := c.decoderLayer(l); !d.hasMixer() || !d.hasChannel() {
		// One block behind one norm: its residual add is xIn + o, which
		// the next layer's norm forms from xMid + o.
		s.xMid = xIn
	}
	// o lives from a projection to the residual add that follows it (the
	// next layer's norm for down_proj's), while the shared q/k/v output is
	// dead (read by AttentionInputs before, rewritten by the next layer's
	// q/k/v GEMM after), and the backward never reads it: it is a view of
	// fused when that is wide enough. (A sparse layer's experts write it
	// from their own scratch, moeScratch.)
	if s.o == nil {
		s.o = shared.fused.Slice(0, n*c.HiddenSize)
	}
	return s
}

// trainingActSpecs lists layer l's own training activations for n tokens
// under the adapter ad, less what drop recomputes (droppedSpecs): the
// residual stream, both norms' outputs and statistics, the output of
// its blocks (unless a view, trainingActs), and each block's own
// (tokenMixer.trainingSpecs, channelMixer.trainingSpecs; attention's q
// in attn, TraceAttentionDType). A sparse layer's experts are traceActs'.
func (c *Config) trainingActSpecs(s *layerActs, l, n int, ad *AdapterShape, drop Recompute, attn kernels.DType) bufSpecs {
	h, d := c.HiddenSize, c.decoderLayer(l)
	var b bufSpecs
	bufs := []*kernels.Buffer{&s.xOut, &s.h1, &s.h2}
	if d.hasMixer() && d.hasChannel() {
		bufs = append(bufs, &s.xMid) // else xMid is xIn (trainingActs)
	}
	for _, dst := range bufs {
		b.f32(dst, n*h)
	}
	b.f32(&s.rstd1, n)
	b.f32(&s.rstd2, n)
	if !c.oViewsFused(l, attn) {
		b.f32(&s.o, n*h) // else a view of the shared q/k/v output (trainingActs)
	}
	b = append(b, d.mixer.trainingSpecs(c, s, l, n, ad, drop, attn)...)
	b = append(b, d.channel.trainingSpecs(c, s, l, n, ad, drop)...)
	if t, ok := c.bf16Layer(l, attn, s, &layerGrads{}); ok {
		return b.inBF16(t)
	}
	return b
}

// layerForward applies decoder layer l: input norm, token mixer, post
// norm, channel mixer (block.go), writing the layer's keys and values
// into cache (or its recurrent states). The residual add that ends a
// layer is fused with the norm that starts the next: layer l first forms
// its input xIn = prev.xMid + prev.o (prev is layer l−1's activations;
// nil for the first layer, whose xIn is the embedding), and leaves xOut =
// xMid + o to the next layer, or to finishLayers after the last.
func (m *Model) layerForward(a *arena, l int, cache *KVCache, idx batchIndex, n int, s, prev *layerActs) {
	be, c, w, d := m.Backend, m.Config, &m.W.Layers[l], m.layer(l)
	h, eps := c.HiddenSize, float32(c.RMSNormEps)
	// The layer's first norm, which forms its input from the previous
	// layer's residual add: the token mixer's, or a channel mixer's that
	// is alone in the layer (its xMid is xIn then).
	first := func(out, cast, rstd, weight kernels.Buffer) {
		if prev == nil {
			be.AddRMSNorm(nil, out, cast, rstd, s.xIn, nil, weight, n, h, eps)
		} else {
			be.AddRMSNorm(s.xIn, out, cast, rstd, prev.xMid, prev.o, weight, n, h, eps)
		}
	}
	if !d.hasMixer() {
		first(s.h2, d.channel.normCast(s), s.rstd2, w.PostAttnNorm)
		d.channel.forward(m, a, l, s, n)
		return
	}
	first(s.h1, s.h1b, s.rstd1, w.InputNorm)
	d.mixer.forward(m, a, l, cache, idx, n, s)
	if !d.hasChannel() {
		return // the mixer's o closes the layer: xIn (= xMid) + o
	}
	be.AddRMSNorm(s.xMid, s.h2, d.channel.normCast(s), s.rstd2, s.xIn, s.o, w.PostAttnNorm, n, h, eps)
	d.channel.forward(m, a, l, s, n)
}

// finishLayers completes the last layer's residual add, xOut = xMid + o,
// which layerForward leaves to the next layer's norm.
func (m *Model) finishLayers(last *layerActs, n int) {
	if last != nil {
		m.Backend.Add(last.xOut, last.xMid, last.o, n*m.Config.HiddenSize)
	}
}
