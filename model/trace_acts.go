package model

import "github.com/grpo-dev/grpo/kernels"

// A training trace whose attention runs in bf16 (traceAttention: bf16
// weights on a GPU) also keeps the activations between a dense layer's
// ops in bf16: every GEMM there rounds its input to bf16 anyway, so an
// f32 copy between two ops bought no precision, only twice the bytes and
// a cast pass before each GEMM. What stays f32 is what accumulates or
// normalises: the residual stream and its gradient, the norms' and
// attention's statistics, the LoRA x·Aᵀ and dy·B (rank-wide), the caches'
// gradients, and the head (logits, log-probs). The kernels read bf16
// widened and accumulate in f32 (kernels.Backend); a layer is bf16 only
// when every op its blocks run takes bf16 activations (bf16Block), so the
// other kinds keep f32 between ops until their kernels do.

// bf16Acts names a layer's buffers that a bf16 trace stores in bf16:
// bufs change dtype; each swap is an f32 output that is not stored at all
// and the bf16 copy (written by the same fused op, kept per layer) that
// the backward reads in its place.
type bf16Acts struct {
	bufs  []*kernels.Buffer
	swaps [][2]*kernels.Buffer
}

// bf16Block is a block whose ops take bf16 activations: bf16Acts lists
// its buffers (activations in s, backward scratch in g) that a bf16
// layer stores in bf16, or reports false when this instance cannot (an
// op it runs takes f32 only).
type bf16Block interface {
	bf16Acts(c *Config, s *layerActs, g *layerGrads) (bf16Acts, bool)
}

// bf16Layer reports whether layer l of a trace whose attention is in
// attn keeps its activations in bf16, and lists s's and g's buffers that
// it stores so: both blocks', its normed inputs (their per-layer bf16
// copies in their place) and its blocks' output.
func (c *Config) bf16Layer(l int, attn kernels.DType, s *layerActs, g *layerGrads) (bf16Acts, bool) {
	if attn != kernels.BF16 {
		return bf16Acts{}, false
	}
	d := c.decoderLayer(l)
	mixer, ok := d.mixer.(bf16Block)
	channel, ok2 := d.channel.(bf16Block)
	if !ok || !ok2 {
		return bf16Acts{}, false
	}
	m, ok := mixer.bf16Acts(c, s, g)
	ch, ok2 := channel.bf16Acts(c, s, g)
	if !ok || !ok2 {
		return bf16Acts{}, false
	}
	return bf16Acts{
		bufs:  append(append([]*kernels.Buffer{&s.o}, m.bufs...), ch.bufs...),
		swaps: append(append([][2]*kernels.Buffer{{&s.h1, &s.h1b}, {&s.h2, &s.h2b}}, m.swaps...), ch.swaps...),
	}, true
}

// isBF16Layer is bf16Layer's decision alone.
func (c *Config) isBF16Layer(l int, attn kernels.DType) bool {
	_, ok := c.bf16Layer(l, attn, &layerActs{}, &layerGrads{})
	return ok
}

// BF16Layers is how many layers of a trace whose attention is in attn
// (TraceAttentionDType) keep the activations between their ops in bf16.
// A layer's decision is its blocks' (bf16Block, which reads the config,
// not the layer index), so it is made once per distinct pair of blocks:
// the specs of every layer ask (oViewsFused), and the estimate's plans
// price models of a hundred layers many times over.
func (c *Config) BF16Layers(attn kernels.DType) int {
	if attn != kernels.BF16 {
		return 0
	}
	n, seen := 0, map[decoderLayer]bool{}
	for l := range c.NumLayers {
		d := c.decoderLayer(l)
		ok, known := seen[d]
		if !known {
			ok = c.isBF16Layer(l, attn)
			seen[d] = ok
		}
		if ok {
			n++
		}
	}
	return n
}

// bf16Trace reports whether any layer of a trace in attn is a bf16
// layer: the backward then keeps a bf16 copy of the residual gradient
// beside it (residualGradSpecs).
func (c *Config) bf16Trace(attn kernels.DType) bool { return c.BF16Layers(attn) > 0 }

// fusedDType is the dtype of the trace's shared q/k/v GEMM output: bf16
// when every layer is a bf16 layer. In a model with other layers (a
// hybrid's DeltaNet, a sparse layer) it stays f32, so that their block
// output can stay a view of it (oViewsFused), where a bf16 buffer would
// give each of them one more f32 buffer of its own to allocate and zero.
func (c *Config) fusedDType(attn kernels.DType) kernels.DType {
	if c.allBF16Layers(attn) {
		return kernels.BF16
	}
	return kernels.F32
}

// oViewsFused reports whether layer l's block output o is a view of the
// shared q/k/v output (trainingActs): it must fit and share its dtype.
func (c *Config) oViewsFused(l int, attn kernels.DType) bool {
	if c.groupWidth(groupQKV) < c.HiddenSize {
		return false
	}
	return c.isBF16Layer(l, attn) == (c.fusedDType(attn) == kernels.BF16)
}

// inBF16 rewrites the specs of a bf16 layer's buffers (t): each of t.bufs
// takes dtype BF16, and each swapped f32 output becomes its bf16 copy.
func (s bufSpecs) inBF16(t bf16Acts) bufSpecs {
	out := make(bufSpecs, len(s))
	for i, b := range s {
		for _, sw := range t.swaps {
			if b.dst == sw[0] {
				b.dst, b.dt = sw[1], kernels.BF16
			}
		}
		for _, d := range t.bufs {
			if b.dst == d {
				b.dt = kernels.BF16
			}
		}
		out[i] = b
	}
	return out
}

// keptInput is what a projection's backward reads of its forward input:
// the f32 activation, or in a bf16 layer (where it is not stored) its
// bf16 copy.
func keptInput(f32, bf16 kernels.Buffer) kernels.Buffer {
	if f32 != nil {
		return f32
	}
	return bf16
}

// allBF16Layers reports whether every layer of a trace in attn is a bf16
// layer: none then reads the shared bf16 casts (each keeps its own).
func (c *Config) allBF16Layers(attn kernels.DType) bool { return c.BF16Layers(attn) == c.NumLayers }
