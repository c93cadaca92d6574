package model

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/kernels"
)

// Recompute is the activation-memory policy of a training forward and
// backward: which of a layer's activations the trace keeps for the backward
// and which the backward recomputes from what was kept. Every policy runs
// the same ops on the same inputs as the forward did, so the recomputed
// values — and hence every gradient — are those of RecomputeNone exactly.
// The policies are ordered by the memory they keep, most first.
//
// In a sparse (Qwen3-MoE) layer the experts' SwiGLU and gathered inputs
// are recomputed by its backward under every policy, so swiglu drops
// nothing more there and selective only attention's output; a checkpointed
// sparse layer keeps its routing and reruns its experts with that routing
// replayed (and with a router adapter keeps the router's logits, which the
// load-balancing loss reads before the rerun).
type Recompute uint8

const (
	// RecomputeNone keeps every activation the backward reads.
	RecomputeNone Recompute = iota
	// RecomputeSwiGLU keeps the MLP's gate and up projections but not
	// their SwiGLU (intermediate-wide), recomputed in the backward by one
	// elementwise op.
	RecomputeSwiGLU
	// RecomputeSelective also recomputes attention (its output, q-wide,
	// and log-sum-exp) in the backward from the kept q and KV cache: one
	// attention forward per layer more, no projection.
	RecomputeSelective
	// RecomputeLayer keeps only each layer's input (per-layer activation
	// checkpointing) and reruns the whole layer's forward in the backward.
	// The KV cache is recomputed too, so one layer's cache serves every
	// checkpointed layer. Model.CheckpointLayers applies it to the last
	// layers only.
	RecomputeLayer
	numRecompute
)

var recomputeNames = [numRecompute]string{"none", "swiglu", "selective", "layer"}

// String is the policy's config name ("layer").
func (p Recompute) String() string {
	if p < numRecompute {
		return recomputeNames[p]
	}
	return fmt.Sprintf("Recompute(%d)", uint8(p))
}

// MarshalText writes the config name, so JSON shows "layer".
func (p Recompute) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// RecomputePolicies lists every policy, least recompute first.
func RecomputePolicies() []Recompute {
	out := make([]Recompute, numRecompute)
	for i := range out {
		out[i] = Recompute(i)
	}
	return out
}

// RecomputeNames are the policies' config names, least recompute first.
func RecomputeNames() []string { return append([]string(nil), recomputeNames[:]...) }

// ParseRecompute maps a config name ("selective") to its policy.
func ParseRecompute(name string) (Recompute, error) {
	for i, n := range recomputeNames {
		if n == name {
			return Recompute(i), nil
		}
	}
	return 0, fmt.Errorf("unknown recompute policy %q; valid: %s", name, strings.Join(recomputeNames[:], ", "))
}

// ParseRecomputeSetting reads a config's recompute setting: a policy name
// (layers 0), or "layer:K" — the last K layers (K ≥ 1) checkpointed, the
// others keeping every activation — or "P+layer:K", the others under
// policy P (swiglu or selective). A K of the model's depth or more
// checkpoints every layer.
func ParseRecomputeSetting(setting string) (p Recompute, layers int, err error) {
	rest, partial := "none", setting
	if r, l, ok := strings.Cut(setting, "+"); ok {
		rest, partial = r, l
	}
	name, k, ok := strings.Cut(partial, ":")
	if !ok {
		p, err := ParseRecompute(setting)
		return p, 0, err
	}
	p, err = ParseRecompute(rest)
	n, nerr := strconv.Atoi(k)
	if err != nil || p == RecomputeLayer || name != RecomputeLayer.String() || nerr != nil || n < 1 {
		return 0, 0, fmt.Errorf("recompute setting %q: want layer:K or P+layer:K (K ≥ 1 layers checkpointed, the others under P: swiglu or selective)", setting)
	}
	return p, n, nil
}

// RecomputeSetting writes a policy and its checkpointed layers as
// ParseRecomputeSetting reads them.
func RecomputeSetting(p Recompute, layers int) string {
	switch {
	case layers <= 0 || p == RecomputeLayer:
		return p.String()
	case p == RecomputeNone:
		return fmt.Sprintf("%s:%d", RecomputeLayer, layers)
	}
	return fmt.Sprintf("%s+%s:%d", p, RecomputeLayer, layers)
}

// layerRecompute is each layer's policy: m.Recompute, except that with
// CheckpointLayers = K > 0 the last K layers are checkpointed
// (RecomputeLayer). The last ones, so that the bounds the estimate charges
// hold: the backward reruns them first, each with an input gradient to
// compute (only the first layer has none), and a rerunnable layer's
// forward scratch lives while the trace holds all the kept layers, not
// only some.
func (m *Model) layerRecompute() []Recompute {
	L := m.Config.NumLayers
	out := make([]Recompute, L)
	for l := range out {
		out[l] = m.Recompute
		if m.CheckpointLayers > 0 && l >= L-m.CheckpointLayers {
			out[l] = RecomputeLayer
		}
	}
	return out
}

// newTrainCache is the trace's KV cache. The layers under RecomputeLayer
// share one layer's buffers: a layer's keys and values are read only by
// its own attention, forward and backward, and the backward rewrites them
// when it reruns the layer, so holding each of theirs would only cost
// memory. Rows a batch does not write are never read (each sequence fills
// its slot from position 0, and attention reads positions up to its own),
// so what another layer left there does not matter. Its keys and values
// are in the trace's attention dtype (traceAttention).
func (m *Model) newTrainCache(slots, maxLen int) *KVCache {
	return m.contiguousCache(slots, maxLen, m.Config.traceCacheShared(m.checkpointedLayers()))
}

// traceCacheShared is how many of a trace's last layers share one K
// and V buffer when checkpointed of them are (newCache's shared): all of
// them, but in a hybrid none — the shared buffer would be the first
// checkpointed layer's, which may have no K and V, so a hybrid's
// attention layers keep their own.
func (c *Config) traceCacheShared(checkpointed int) int {
	if c.LinearLayers() > 0 {
		return 0
	}
	return checkpointed
}

// TraceCacheLayers is how many layers' K and V buffers a training trace's
// KV cache allocates when the last checkpointed layers run under
// RecomputeLayer: one per attention layer, one for all the checkpointed
// ones (newTrainCache).
func (c *Config) TraceCacheLayers(checkpointed int) int {
	shared, n := c.traceCacheShared(checkpointed), 0
	for l := range c.NumLayers {
		if c.cacheOwner(l, shared) == l {
			n++
		}
	}
	return n
}

// checkpointedLayers is how many layers run under RecomputeLayer: the
// layers of a trace's cache that share one K (and V) buffer.
func (m *Model) checkpointedLayers() int {
	n := 0
	for _, p := range m.layerRecompute() {
		if p == RecomputeLayer {
			n++
		}
	}
	return n
}

// forwardActs allocates layer l's activations for a training forward under
// p: what the backward reads from the trace in keep, what it recomputes in
// tmp (freed once the layer's forward is done); shared is the trace's
// buffers that every layer uses (sharedTrainingActs). Under RecomputeNone
// it is trainingActs, everything in keep.
func (m *Model) forwardActs(keep, tmp *arena, l int, xIn kernels.Buffer, shared *layerActs, n int, ad *AdapterShape, p Recompute) *layerActs {
	switch p {
	case RecomputeNone:
		return m.trainingActs(keep, l, xIn, shared, n, ad, RecomputeNone)
	case RecomputeLayer:
		// The layer's output is the next layer's kept input; the rest is
		// rebuilt by the backward's rerun.
		s := m.trainingActs(tmp, l, xIn, shared, n, ad, RecomputeNone)
		m.Config.checkpointSpecs(s, n).alloc(keep)
		return s
	}
	s := m.trainingActs(keep, l, xIn, shared, n, ad, p)
	m.allocDropped(tmp, l, s, n, p)
	return s
}

// checkpointSpecs is what the trace keeps of a checkpointed layer's own
// activations: its output, the next layer's input.
func (c *Config) checkpointSpecs(s *layerActs, n int) bufSpecs {
	var b bufSpecs
	b.f32(&s.xOut, n*c.HiddenSize)
	return b
}

// closesOwnLayer reports whether a layer under p completes its own
// residual add (xOut = xMid + o) rather than leaving it to the next
// layer's norm (layerForward): under RecomputeLayer its xMid lives in the
// forward's scratch, freed before the next layer runs.
func closesOwnLayer(p Recompute) bool { return p == RecomputeLayer }

// allocDropped allocates in a the activations that trainingActs left out
// under p (droppedSpecs).
func (m *Model) allocDropped(a *arena, l int, s *layerActs, n int, p Recompute) {
	m.Config.droppedSpecs(s, l, n, p, m.traceAttention()).alloc(a)
}

// droppedSpecs lists what layer l's trace drops under p for the backward
// to recompute: each block's (a dense layer's SwiGLU output under swiglu
// and finer, attention's output, log-sum-exp and gated output under
// selective), in a trace in attn (bf16 in a bf16 layer, trace_acts.go).
func (c *Config) droppedSpecs(s *layerActs, l, n int, p Recompute, attn kernels.DType) bufSpecs {
	d := c.decoderLayer(l)
	b := append(d.channel.droppedSpecs(c, s, n, p), d.mixer.droppedSpecs(c, s, n, p)...)
	if t, ok := c.bf16Layer(l, attn, s, &layerGrads{}); ok {
		return b.inBF16(t)
	}
	return b
}

// kept is what the trace holds of a layer's forward activations under p:
// the buffers freed with the layer's forward are dropped, so that a
// backward that forgot to recompute one fails on a nil buffer instead of
// reading freed memory.
func (m *Model) kept(l int, s *layerActs, p Recompute) *layerActs {
	d := m.layer(l)
	switch p {
	case RecomputeNone:
		return s
	case RecomputeLayer:
		k := &layerActs{xIn: s.xIn, xOut: s.xOut, fused: s.fused, h1b: s.h1b, h2b: s.h2b, actb: s.actb}
		d.channel.keepCheckpointed(m, s, k)
		return k
	}
	k := *s
	d.channel.dropKept(&k, p)
	d.mixer.dropKept(&k, p)
	return &k
}

// backwardActs returns layer l's activations for its backward: the kept
// ones, with what p dropped recomputed into buffers of a (the layer's
// backward scratch) by the very ops the forward ran.
func (tr *Trace) backwardActs(a *arena, l int) *layerActs {
	m, d := tr.m, tr.m.layer(l)
	kept, n, p := tr.layers[l], tr.n, tr.recompute[l]
	switch p {
	case RecomputeNone:
		return kept
	case RecomputeLayer:
		// The kept input is complete (the embedding, the previous layer's
		// own add, or this layer's first norm in the forward wrote it), so
		// the rerun starts from it with no previous layer; it stops short
		// of xOut, which the backward never reads.
		s := m.trainingActs(a, l, kept.xIn, kept, n, &tr.ad, RecomputeNone)
		d.channel.rerunActs(m, a, l, n, s, kept, &tr.ad, tr.moe)
		m.layerForward(a, l, tr.cache, tr.idx, n, s, nil)
		return s
	}
	s := *kept
	m.allocDropped(a, l, &s, n, p)
	d.mixer.recompute(m, l, tr.cache, tr.idx, n, &s, p)
	d.channel.recompute(m, l, &s, n, p)
	return &s
}
