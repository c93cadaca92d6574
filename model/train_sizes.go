package model

import "github.com/grpo-dev/grpo/kernels"

// The sizes of what a training forward and backward allocate, summed from
// the very buffer lists the allocators allocate from (bufSpecs), for the
// memory estimate, which prices a run before there is a Model: it passes
// the adapter's shape (UniformAdapterShape) and keeps only its own
// assumptions about the batch (its tokens, rows and sequences).

// TrainingLayer is what layer l of a training trace of n tokens allocates
// under its recompute policy (ForwardTrain, Backward's backwardActs).
type TrainingLayer struct {
	// Kept is what the trace holds of the layer until its backward: its
	// activations under the policy (forwardActs, kept), and in a sparse
	// layer its experts buffer (allocated before the first layer,
	// newRouting) and what its experts keep (trainingMoEActs).
	Kept int64
	// Forward is what lives only through the layer's forward: what the
	// policy drops, or a checkpointed layer's whole set but what Kept
	// holds of it.
	Forward int64
	// Rerun is what the layer's backward allocates to recompute what the
	// policy dropped (backwardActs), beside its scratch (BackwardBytes).
	Rerun int64
	// Experts is Kept's mixture-of-experts part, its routing included;
	// 0 in a dense layer.
	Experts int64
	// Routing is a sparse layer's experts buffer (0 in a dense one),
	// which the trace allocates for every sparse layer before the first
	// layer runs.
	Routing int64
}

// TrainingLayerBytes sizes layer l of a training trace of n tokens under
// the adapter ad and policy p; replay is whether the batch replays a
// recorded routing (Batch.Experts), whose recomputed top-k each sparse
// layer keeps; attn is the dtype of the trace's queries and caches
// (TraceAttentionDType).
func (c *Config) TrainingLayerBytes(l, n int, ad AdapterShape, p Recompute, replay bool, attn kernels.DType) TrainingLayer {
	var s layerActs
	own := RecomputeNone
	if p != RecomputeLayer {
		own = p
	}
	acts := c.trainingActSpecs(&s, l, n, &ad, own, attn).bytes()
	// What the channel mixer allocates beside (a sparse layer's experts).
	ch := c.decoderLayer(l).channel.traceBytes(c, l, n, &ad, replay, attn)
	out := TrainingLayer{Routing: ch.routing}
	switch p {
	case RecomputeLayer:
		out.Kept = c.checkpointSpecs(&s, n).bytes() + ch.kept
		out.Experts = ch.kept
		// The forward's scratch holds the whole set, its own output
		// too, though forwardActs gives the layer the kept one instead.
		out.Forward = acts + ch.rest
		out.Rerun = acts + ch.rerun
	default:
		dropped := c.droppedSpecs(&s, l, n, p, attn).bytes()
		out.Kept = acts + ch.rest + ch.kept
		out.Experts = ch.rest + ch.kept
		out.Forward, out.Rerun = dropped, dropped
	}
	return out
}

// MoEScratchBytes is the forward scratch a training trace of n tokens
// allocates for its sparse layers to share (newMoEScratch), in a trace
// whose attention is in attn (bf16 when the sparse layers are bf16
// layers); 0 for a dense model.
func (c *Config) MoEScratchBytes(n int, attn kernels.DType) int64 {
	if c.SparseLayers() == 0 {
		return 0
	}
	var s moeScratch
	return c.traceMoEScratchSpecs(&s, n, attn).bytes()
}

// BackwardBytes is layer l's backward scratch for n tokens under the
// adapter ad (layerBackward: the block gradients, each adapter's dy·B),
// beside what it recomputes (TrainingLayer.Rerun): attention's key and
// value gradients are shaped as the layer's KV cache of cacheRows rows,
// and a DeltaNet layer holds the gradients of the states of groups shared
// prompts (0 without). The first layer's input, the frozen embedding,
// gets no gradient. attn is the trace's attention dtype
// (TraceAttentionDType).
func (c *Config) BackwardBytes(l, n, cacheRows, groups int, ad AdapterShape, attn kernels.DType) int64 {
	var g layerGrads
	return c.layerGradSpecs(&g, l, n, cacheRows, groups, &ad, l > 0, attn).bytes()
}

// TraceBytes is what a training trace of n tokens allocates beside its
// layers (TrainingLayerBytes, MoEScratchBytes) and its KV cache, with r
// scored rows listed (ForwardTrain's rows: the rows that carry loss).
type TraceBytes struct {
	// Inputs is allocated before the first layer: the batch's indices
	// and its runs (runs linear-attention runs, in a model with DeltaNet
	// layers), the targets and scored rows, the embedded input, and what
	// every layer shares (the q/k/v GEMM's output; with casts, the bf16
	// casts of the GEMMs' inputs).
	Inputs int64
	// Head is allocated after the last layer, on the scored rows: the
	// final norm's gathered input, output (and its cast) and statistics,
	// the logits, and the targets' log-probs and entropies.
	Head int64
}

// TraceBytes sizes a trace of n tokens, r scored, cut into runs
// linear-attention runs (ignored without DeltaNet layers); casts is
// whether the layers write bf16 casts of their GEMMs' inputs (bf16
// weights on a backend whose GEMMs round their input to bf16); attn is
// the trace's attention dtype (TraceAttentionDType).
func (c *Config) TraceBytes(n, r, runs int, casts bool, attn kernels.DType) TraceBytes {
	var tr Trace
	var idx batchIndex
	var x, hF, hFb kernels.Buffer
	var s layerActs
	in := indexSpecs(&idx, n)
	if c.LinearLayers() > 0 && runs > 0 {
		in = append(in, runsSpec(&idx.runs, runs))
	}
	in = append(in, c.traceInputSpecs(&tr, &x, n, r, true)...)
	in = append(in, c.sharedTrainingSpecs(&s, n, casts, attn)...)
	return TraceBytes{Inputs: in.bytes(), Head: c.traceHeadSpecs(&tr, &hF, &hFb, r, true, casts).bytes()}
}

// BackwardHead is what Backward allocates outside the layers.
type BackwardHead struct {
	// LMHead is the LM head's scratch of the scored rows, freed before
	// the layers' backward.
	LMHead int64
	// Residual is the residual stream's gradient of every token, alive
	// through the whole backward.
	Residual int64
	// LoadBalance is the load-balancing loss's router gradient, alive
	// through the layers' backward when the trace adds that loss
	// (Trace.AuxCoef, with an adapted router).
	LoadBalance int64
}

// BackwardHeadBytes sizes Backward's buffers outside the layers for a
// trace of n tokens, r of them scored; casts and attn as TraceBytes (a
// bf16 checkpoint's LM head is bf16 too).
func (c *Config) BackwardHeadBytes(n, r int, casts bool, attn kernels.DType) BackwardHead {
	var dlogits, dhF, dx, dxb, dprobs kernels.Buffer
	return BackwardHead{LMHead: c.lmHeadGradSpecs(&dlogits, &dhF, r, casts).bytes(), Residual: c.residualGradSpecs(&dx, &dxb, n, attn).bytes(),
		LoadBalance: c.loadBalanceGradSpecs(&dprobs).bytes()}
}
