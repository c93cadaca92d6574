package model

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// Load reads config.json and the safetensors weights (single file or
// sharded) of the model directory dir onto be. BF16 weights go into BF16
// buffers (a backend may widen them); F16 and F32 are converted to F32.
func Load(dir string, be kernels.Backend) (*Model, error) { return load(dir, be, nil) }

// load is Load, of an expert-parallel rank's experts only when coll is
// not nil (LoadExperts).
func load(dir string, be kernels.Backend, coll kernels.Collective) (*Model, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	if coll != nil {
		if err := cfg.holdExperts(coll); err != nil {
			return nil, err
		}
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	if cfg.Arch().Nemotron {
		if _, ok := set.Tensor("model.embeddings.weight"); ok {
			cfg.nemotronRoot = "model."
		}
	}
	m := newModel(cfg, be)
	specs := cfg.specs(&m.W)
	// A fused group is BF16 when all its checkpoint tensors are (the usual
	// case), else F32, which holds any of them exactly.
	groupDT := func(g *fusedSpec) kernels.DType {
		for _, i := range g.members {
			if t, ok := set.Tensor(specs[i].name); !ok || t.DType != safetensors.BF16 {
				return kernels.F32
			}
		}
		return kernels.BF16
	}
	loaded := map[*fusedSpec]bool{}
	for _, sp := range specs {
		if g := sp.fused; g != nil && g.packed != nil {
			if !loaded[g] {
				if err := g.packed.load(be, g, set); err != nil {
					m.Free()
					return nil, fmt.Errorf("%s: %v", dir, err)
				}
				loaded[g] = true
			}
			if *g.dst != nil { // nil: kept MXFP4, no views
				*sp.dst = (*g.dst).Slice(sp.off, numel(sp.shape))
			}
			continue
		}
		if g := sp.fused; g != nil && g.whole != "" {
			if t, ok := set.Tensor(g.whole); ok && !loaded[g] {
				if err := loadWhole(be, g, t); err != nil {
					m.Free()
					return nil, fmt.Errorf("%s: %v", dir, err)
				}
				loaded[g] = true
			}
			if loaded[g] {
				*sp.dst = (*g.dst).Slice(sp.off, numel(sp.shape))
				continue
			}
		}
		t, ok := set.Tensor(sp.name)
		if !ok {
			m.Free()
			if g := sp.fused; g != nil && g.whole != "" {
				return nil, fmt.Errorf("%s: neither tensor %q nor %q is there; is this a %s checkpoint with this config.json?", dir, g.whole, sp.name, cfg.Arch().Name)
			}
			return nil, fmt.Errorf("%s: tensor %q is missing; is this a %s checkpoint with this config.json?", dir, sp.name, cfg.Arch().Name)
		}
		if !shapeEqual(t.Shape, sp.shape) {
			m.Free()
			return nil, fmt.Errorf("%s: tensor %q has shape %v but config.json implies %v", dir, sp.name, t.Shape, sp.shape)
		}
		dt := kernels.F32
		if t.DType == safetensors.BF16 && !sp.plusOne && !sp.f32 {
			dt = kernels.BF16
		}
		buf := sp.place(be, dt, groupDT)
		*sp.dst = buf
		if err := upload(be, buf, t, sp.plusOne, sp.interleaved, sp.held.first*numel(sp.shape[1:])); err != nil {
			m.Free()
			return nil, fmt.Errorf("%s: tensor %q: %v", dir, sp.name, err)
		}
	}
	m.Skipped = skippedTensors(cfg, set.Names())
	if cfg.TieWordEmbeddings {
		m.W.LMHead = m.W.Embed
	}
	if coll != nil {
		m.ep = &expertParallel{coll: coll}
	}
	return m, nil
}

// upload writes into buf the run of t's values that starts at element
// from (0, or an expert-parallel rank's experts of a tensor stacking
// every expert's), buf.Len() of them: BF16 bits as they are (into a BF16
// or F32 buffer), anything else converted to f32; with plusOne, 1 + t in
// f32 (a zero-centred norm weight); with interleaved, each row's gate/up
// pairs as halves (deinterleave), in f32.
func upload(be kernels.Backend, buf kernels.Buffer, t safetensors.Tensor, plusOne, interleaved bool, from int) error {
	n := buf.Len()
	if bits, ok := t.BF16Bits(); ok && !interleaved && !plusOne {
		be.UploadBF16(buf, bits[from:from+n])
		return nil
	}
	vals, err := t.Float32s()
	if err != nil {
		return err
	}
	if interleaved {
		vals = deinterleave(vals, t.Shape[len(t.Shape)-1])
	}
	vals = vals[from : from+n]
	if plusOne {
		for i := range vals {
			vals[i]++
		}
	}
	be.Upload(buf, vals)
	return nil
}

// NewRandom builds a model of the given shape with random weights
// (normal, std 0.02; norms 1), for benchmarks and shape experiments.
func NewRandom(cfg *Config, be kernels.Backend, seed uint64) *Model {
	m := newModel(cfg, be)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	for _, sp := range cfg.specs(&m.W) {
		vals := make([]float32, numel(sp.shape))
		if len(sp.shape) == 1 && !isBias(sp.name) {
			for i := range vals {
				vals[i] = 1
			}
		} else {
			for i := range vals {
				vals[i] = float32(rng.NormFloat64() * 0.02)
			}
		}
		buf := sp.place(be, kernels.F32, func(*fusedSpec) kernels.DType { return kernels.F32 })
		be.Upload(buf, vals)
		*sp.dst = buf
	}
	if cfg.TieWordEmbeddings {
		m.W.LMHead = m.W.Embed
	}
	return m
}

// loadWhole uploads t, a checkpoint tensor holding a whole fused group,
// into the group's buffer.
func loadWhole(be kernels.Backend, g *fusedSpec, t safetensors.Tensor) error {
	if !shapeEqual(t.Shape, g.wholeShape) {
		return fmt.Errorf("tensor %q has shape %v but config.json implies %v", g.whole, t.Shape, g.wholeShape)
	}
	dt := kernels.F32
	if t.DType == safetensors.BF16 {
		dt = kernels.BF16
	}
	*g.dst = be.Alloc(dt, g.size)
	// An expert-parallel rank's experts are a run of the whole's.
	if err := upload(be, *g.dst, t, false, false, g.wholeFrom*numel(t.Shape[1:])); err != nil {
		return fmt.Errorf("tensor %q: %v", g.whole, err)
	}
	return nil
}

func isBias(name string) bool { return filepath.Ext(name) == ".bias" }

// Free releases the model's weights.
func (m *Model) Free() {
	bufs := []kernels.Buffer{m.W.Embed, m.W.Norm, m.invFreq}
	if !m.Config.TieWordEmbeddings {
		bufs = append(bufs, m.W.LMHead)
	}
	for i := range m.W.Layers {
		l, d := &m.W.Layers[i], m.layer(i)
		bufs = append(bufs, l.InputNorm, l.PostAttnNorm)
		// The blocks' own buffers, not their views.
		for _, p := range append(d.mixer.weightBuffers(l), d.channel.weightBuffers(l)...) {
			bufs = append(bufs, *p)
		}
		if l.MoE != nil {
			bufs = append(bufs, l.MoE.mxfp4Buffers()...)
		}
	}
	for _, b := range bufs {
		if b != nil {
			m.Backend.Free(b)
		}
	}
	m.W = Weights{}
}

// MapWeights replaces every frozen weight buffer b by f(b) (f frees b if it
// allocates a new one), for callers that change how weights are stored
// (bench rounds random weights to bf16). f sees the fused QKV and GateUp
// buffers, never their views, and the views are sliced again from the
// results; a tied head stays the embedding.
func (m *Model) MapWeights(f func(kernels.Buffer) kernels.Buffer) {
	apply := func(p *kernels.Buffer) {
		if *p != nil {
			*p = f(*p)
		}
	}
	tied := m.W.LMHead == m.W.Embed
	apply(&m.W.Embed)
	apply(&m.W.Norm)
	if tied {
		m.W.LMHead = m.W.Embed
	} else {
		apply(&m.W.LMHead)
	}
	for i := range m.W.Layers {
		l, d := &m.W.Layers[i], m.layer(i)
		apply(&l.InputNorm)
		apply(&l.PostAttnNorm)
		for _, b := range []struct {
			bufs    []*kernels.Buffer
			reslice func(*Config, *Layer)
		}{{d.mixer.weightBuffers(l), d.mixer.resliceWeights}, {d.channel.weightBuffers(l), d.channel.resliceWeights}} {
			for _, p := range b.bufs {
				apply(p)
			}
			b.reslice(m.Config, l)
		}
	}
}
