package model

import "github.com/grpo-dev/grpo/kernels"

// An architecture is a list of decoder layers, each a composition of
// blocks: an input norm, a token mixer (what mixes information across
// positions: attention, gated DeltaNet), a post norm and a channel mixer
// (what transforms each token on its own: a dense SwiGLU MLP, a mixture
// of experts). The passes (layer.go, train.go, recompute.go, decode.go)
// and the sizes (train_sizes.go, forward_sizes.go, decode_sizes.go) loop
// over the layers and call the blocks' methods; only the blocks know
// their kind's ops, buffers and weights. Each block is in its own file
// (block_attention.go, block_deltanet.go, block_swiglu.go, block_moe.go).

// tokenMixer is a block that mixes tokens across positions. It reads the
// layer's normed input s.h1 (and its bf16 cast s.h1b) and writes its
// output into s.o, which the layer adds into the residual stream.
type tokenMixer interface {
	// cacheKind is what the mixer keeps per sequence between forwards:
	// MixAttention a paged KV cache, MixGatedDeltaNet a recurrent state.
	cacheKind() TokenMixer
	// loraTargets are the projections of the mixer an adapter may adapt.
	loraTargets() []Proj
	// params is the mixer's parameter count; gemmWeight the weight of
	// its first GEMM, whose dtype says whether the layers write bf16
	// casts of their GEMMs' inputs (Model.castsBF16).
	params(c *Config) int64
	gemmWeight(w *Layer) kernels.Buffer
	// projWeight is projection p's frozen weight in w (nil: not the
	// mixer's), which merging an adapter adds into (Layer.Weight).
	projWeight(w *Layer, p Proj) kernels.Buffer
	// weightSpecs appends the mixer's weight tensors under prefix
	// ("model.layers.N.") to s, into w, and returns the ones listed after
	// the channel mixer's (tail): the order NewRandom draws them in.
	weightSpecs(c *Config, s []tensorSpec, w *Layer, prefix string) (out, tail []tensorSpec)
	// weightBuffers are the mixer's own weight allocations (not views),
	// and resliceWeights sets the views again after they were replaced.
	weightBuffers(w *Layer) []*kernels.Buffer
	resliceWeights(c *Config, w *Layer)
	// inferenceSpecs lists the mixer's part of the inference set of n
	// tokens, which every layer of its kind shares; finishInference
	// makes the set's aliases once it is allocated.
	inferenceSpecs(c *Config, s *layerActs, n int, ad *AdapterShape) bufSpecs
	finishInference(s *layerActs)
	// loraSpecs lists the x·Aᵀ of layer l's adapted projections that
	// are not in the inference set (l < 0: the largest rank of any
	// layer, for the static decode step).
	loraSpecs(c *Config, s *layerActs, l, n int, ad *AdapterShape) bufSpecs
	// trainingSpecs lists layer l's training activations (drop: less
	// what the backward recomputes, droppedSpecs; attn: the dtype of the
	// trace's queries and caches, Model.traceAttention), and dropKept
	// clears in a kept copy what p dropped.
	trainingSpecs(c *Config, s *layerActs, l, n int, ad *AdapterShape, drop Recompute, attn kernels.DType) bufSpecs
	droppedSpecs(c *Config, s *layerActs, n int, p Recompute) bufSpecs
	dropKept(k *layerActs, p Recompute)
	// gradSpecs lists layer l's backward scratch (cacheRows: the rows of
	// the layer's KV cache; groups: the shared prompts whose recurrent
	// states the trace holds).
	gradSpecs(c *Config, g *layerGrads, l, n, cacheRows, groups int, ad *AdapterShape, needInput bool) bufSpecs
	// forward writes s.o from s.h1, reading and writing the layer's
	// cache; recompute rebuilds what p dropped, by the forward's ops.
	forward(m *Model, a *arena, l int, cache *KVCache, idx batchIndex, n int, s *layerActs)
	recompute(m *Model, l int, cache *KVCache, idx batchIndex, n int, s *layerActs, p Recompute)
	// backward turns dx, the gradient of s.o, into the gradient of
	// s.h1, which it returns (nil unless needInput), adding its
	// adapters' gradients.
	backward(tr *Trace, l int, s *layerActs, g *layerGrads, dx kernels.Buffer, needInput bool) (dh1 kernels.Buffer)
}

// channelMixer is a block that transforms each token on its own. It
// reads the layer's post-norm output s.h2 and writes its output into
// s.o, which the next layer's norm adds into the residual stream.
type channelMixer interface {
	// sparse reports whether the mixer routes tokens to experts (the
	// layer keeps a routing record).
	sparse() bool
	loraTargets() []Proj
	params(c *Config) int64
	projWeight(w *Layer, p Proj) kernels.Buffer
	// weightSpecs appends the mixer's weight tensors under prefix to s.
	weightSpecs(c *Config, s []tensorSpec, w *Layer, prefix string) []tensorSpec
	weightBuffers(w *Layer) []*kernels.Buffer
	resliceWeights(c *Config, w *Layer)
	// normCast is the bf16 cast of h2 the post norm writes for the
	// mixer's GEMMs (nil: the mixer reads the f32 output only).
	normCast(s *layerActs) kernels.Buffer
	// inferenceSpecs lists the mixer's part of the inference set, the
	// experts' set apart (ForwardSizes.MoE); finishInference completes
	// it once allocated.
	inferenceSpecs(c *Config, s *layerActs, n int, ad *AdapterShape) (acts, experts bufSpecs)
	finishInference(m *Model, s *layerActs, n int)
	loraSpecs(c *Config, s *layerActs, l, n int, ad *AdapterShape) bufSpecs
	trainingSpecs(c *Config, s *layerActs, l, n int, ad *AdapterShape, drop Recompute) bufSpecs
	droppedSpecs(c *Config, s *layerActs, n int, p Recompute) bufSpecs
	dropKept(k *layerActs, p Recompute)
	// traceActs allocates what the mixer keeps in a training trace beside
	// trainingSpecs' (tr's routing, experts scratch and replay flag as
	// ForwardTrain has them), by policy p: what the trace keeps in
	// keep, the rest in tmp.
	traceActs(m *Model, keep, tmp *arena, l, n int, s *layerActs, ad *AdapterShape, routing kernels.Buffer, scratch *moeScratch, replay bool, p Recompute)
	// traceBytes sizes traceActs' allocations for TrainingLayerBytes.
	traceBytes(c *Config, l, n int, ad *AdapterShape, replay bool, attn kernels.DType) channelTraceBytes
	// keepCheckpointed copies into k, a checkpointed layer's kept set,
	// what the backward's rerun needs of s; rerunActs gives the rerun's
	// set s what traceActs gave the forward's, replaying kept's routing.
	keepCheckpointed(m *Model, s, k *layerActs)
	rerunActs(m *Model, a *arena, l, n int, s, kept *layerActs, ad *AdapterShape, scratch *moeScratch)
	gradSpecs(c *Config, g *layerGrads, l, n int, ad *AdapterShape) bufSpecs
	forward(m *Model, a *arena, l int, s *layerActs, n int)
	recompute(m *Model, l int, s *layerActs, n int, p Recompute)
	// backward turns dx, the gradient of s.o, into the gradient of s.h2,
	// which it returns, adding its adapters' gradients.
	backward(tr *Trace, l int, s *layerActs, g *layerGrads, dx kernels.Buffer) (dh2 kernels.Buffer)
}

// channelTraceBytes is what a channel mixer's traceActs allocates beside
// its trainingSpecs: rest lives with the layer's activations (only
// through the forward when checkpointed), kept in the trace until the
// backward, routing is its experts buffer (allocated before the first
// layer), and rerun what a checkpointed layer's backward reallocates.
type channelTraceBytes struct{ rest, kept, routing, rerun int64 }

// decoderLayer is one layer of the architecture: input norm, token
// mixer, post norm, channel mixer, each with a residual add.
type decoderLayer struct {
	mixer   tokenMixer
	channel channelMixer
}

// decoderLayers composes the architecture from the config: each layer's
// token mixer from layer_types (Config.Mixer), its channel mixer from
// the MoE settings (Config.IsSparse). Adding a family is a config reader
// that sets these, plus any new block.
func (c *Config) decoderLayers() []decoderLayer {
	out := make([]decoderLayer, c.NumLayers)
	for l := range out {
		out[l] = c.decoderLayer(l)
	}
	return out
}

// decoderLayer composes layer l.
func (c *Config) decoderLayer(l int) decoderLayer {
	a := c.Arch()
	if a.Nemotron {
		return c.nemotronLayer(l)
	}
	var d decoderLayer
	if c.Mixer(l) == MixGatedDeltaNet {
		d.mixer = deltaNet{}
	} else {
		d.mixer = attention{outputGate: a.OutputGate, qkNorm: a.QKNorm || c.UseQKNorm,
			qkvBias: a.QKVBias || c.AttentionBias, oBias: c.AttentionBias && !a.BiasNotO}
	}
	if c.IsSparse(l) {
		shared := c.SharedExpertIntermediateSize > 0
		oss := a.GptOssExperts
		d.channel = moe{shared: shared, sharedGate: shared && !a.SigmoidRouter, sigmoidRouter: a.SigmoidRouter,
			routerBias: oss, expertBias: oss, clampedGLU: oss}
	} else {
		d.channel = swiGLU{}
	}
	return d
}

// nemotronLayer composes Nemotron-H's layer l: its one block, the other
// half absent (block_none.go).
func (c *Config) nemotronLayer(l int) decoderLayer {
	switch c.Block(l) {
	case BlockMamba:
		return decoderLayer{mixer: mamba2{}, channel: noChannel{}}
	case BlockAttention:
		return decoderLayer{mixer: attention{}, channel: noChannel{}}
	case BlockMoE:
		return decoderLayer{mixer: noMixer{}, channel: moe{shared: true, sigmoidRouter: true, relu2: true, latent: c.MoELatent() > 0}}
	}
	return decoderLayer{mixer: noMixer{}, channel: relu2MLP{}}
}

// blockKinds are the distinct token and channel mixers of the
// architecture, in layer order of first use: the kinds whose inference
// set (shared by every layer of the kind) the passes allocate.
func (c *Config) blockKinds() (mixers []tokenMixer, channels []channelMixer) {
	seenM, seenC := map[tokenMixer]bool{}, map[channelMixer]bool{}
	for _, d := range c.decoderLayers() {
		if !seenM[d.mixer] {
			seenM[d.mixer] = true
			mixers = append(mixers, d.mixer)
		}
		if !seenC[d.channel] {
			seenC[d.channel] = true
			channels = append(channels, d.channel)
		}
	}
	return mixers, channels
}

// Weight is projection p's frozen weight in the layer (a view of a fused
// buffer for the members of one), nil where the layer has no such
// projection or, in a sparse layer, for the experts' (MoEWeights).
func (w *Layer) Weight(p Proj) kernels.Buffer {
	if b := w.blocks.mixer.projWeight(w, p); b != nil {
		return b
	}
	return w.blocks.channel.projWeight(w, p)
}

// layer is layer l's blocks: the model's composition (newModel), or for
// a Model built without one, the config's.
func (m *Model) layer(l int) decoderLayer {
	if m.layers != nil {
		return m.layers[l]
	}
	return m.Config.decoderLayer(l)
}

// appendMember appends to s a tensor that is a member of the fused group
// g (at its current end), growing g.
func appendMember(s []tensorSpec, g *fusedSpec, name string, shape []int, dst *kernels.Buffer) []tensorSpec {
	sp := tensorSpec{name: name, shape: shape, dst: dst, fused: g, off: g.size}
	g.size += numel(shape)
	g.members = append(g.members, len(s))
	return append(s, sp)
}
