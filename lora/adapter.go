package lora

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// Adapter is a set of LoRA pairs (A, B) on a model's projections, with
// gradient buffers, living on the model's Backend. It implements
// model.Adapter.
type Adapter struct {
	// Config holds the adapter-wide hyperparameters. Modules adapted with a
	// PEFT rank_pattern / alpha_pattern override carry their own rank and
	// alpha (see Module).
	Config Config
	cfg    *model.Config
	be     kernels.Backend
	mods   [][model.NumProj]*module
	// experts are the per-expert adapters of sparse layers (experts.go);
	// nil for a dense model.
	experts [][model.NumProj]*expertModule
	// routers are the mixture-of-experts layers' router adapters
	// (router.go); nil when none.
	routers []*module
	params  []Param
	// grouped are the A matrices stored together per layer (groupA);
	// views are the parameter buffers that are views into them.
	grouped [][]groupedA
	views   map[kernels.Buffer]bool
	// held is the experts of each sparse layer the adapter holds: every
	// expert, or an expert-parallel rank's share (model.LocalExperts).
	held struct{ first, n int }
}

// module is one adapted projection.
type module struct {
	rank  int
	alpha float64
	l     *model.LoRA
}

// Param is one trainable tensor: a lora_A or lora_B matrix and its
// gradient, under the key PEFT stores it with.
type Param struct {
	// Name is the PEFT key, e.g.
	// base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight.
	Name  string
	Layer int
	Proj  model.Proj
	// Expert is the expert index of an expert's adapter in a
	// mixture-of-experts layer, −1 for a dense projection.
	Expert int
	// Router marks a router's adapter (Proj is then meaningless).
	Router bool
	// Value and Grad are F32 buffers of Shape[0]·Shape[1] elements,
	// row-major Shape[0] × Shape[1] (rank × in for A, out × rank for B).
	Value, Grad kernels.Buffer
	Shape       [2]int
}

// New builds an adapter for m with PEFT's default initialisation: A drawn
// from kaiming_uniform_(a=√5), which is U(−1/√in, 1/√in), and B = 0, so the
// adapted model starts equal to the base model. Each matrix draws from its
// own PCG stream keyed by seed and its PEFT name, so adding a target module
// leaves the others' values unchanged.
func New(m *model.Model, cfg Config, seed uint64) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	projs, routers, err := cfg.resolve(m.Config)
	if err != nil {
		return nil, err
	}
	if routers && m.Config.SparseLayers() == 0 {
		return nil, fmt.Errorf("lora.target_modules lists %q, the routers of a mixture-of-experts model, but this %s model has none; remove it", model.RouterModule, m.Config.ModelType)
	}
	a := newAdapter(m, cfg)
	initA := func(name string, in int) []float32 {
		rng := rand.New(rand.NewPCG(seed, streamOf(name)))
		bound := 1 / math.Sqrt(float64(in))
		av := make([]float32, cfg.Rank*in)
		for i := range av {
			av[i] = float32((2*rng.Float64() - 1) * bound)
		}
		return av
	}
	for layer := range m.Config.NumLayers {
		if routers && m.Config.IsSparse(layer) {
			in, out := routerDims(m.Config)
			a.addRouter(layer, cfg.Rank, cfg.Alpha, initA(routerKey(a.cfg, layer, "A"), in), make([]float32, out*cfg.Rank))
		}
		for _, p := range projs {
			if !m.Config.HasProj(layer, p) {
				continue
			}
			if isExpertProj(m.Config, layer, p) {
				if !cfg.AdaptsExperts(m.Config) {
					continue
				}
				in, out := m.Config.ExpertDims(p)
				first, local := a.held.first, a.held.n
				var av, bv [][]float32
				for e := first; e < first+local; e++ {
					av = append(av, initA(expertKey(a.cfg, layer, e, p, "A"), in))
					bv = append(bv, make([]float32, out*cfg.Rank))
				}
				a.addExperts(layer, p, cfg.Rank, cfg.Alpha, first, av, bv)
				continue
			}
			in, out := m.Config.Dims(p)
			a.add(layer, p, cfg.Rank, cfg.Alpha, initA(peftKey(a.cfg, layer, p, "A"), in), make([]float32, out*cfg.Rank))
		}
	}
	a.groupA()
	return a, nil
}

func streamOf(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

func newAdapter(m *model.Model, cfg Config) *Adapter {
	a := &Adapter{Config: cfg, cfg: m.Config, be: m.Backend, mods: make([][model.NumProj]*module, m.Config.NumLayers)}
	a.held.first, a.held.n = m.LocalExperts()
	return a
}

// add uploads one (A, B) pair with zeroed gradient buffers.
func (a *Adapter) add(layer int, p model.Proj, rank int, alpha float64, av, bv []float32) {
	in, out := a.cfg.Dims(p)
	up := func(v []float32) kernels.Buffer {
		b := a.be.Alloc(kernels.F32, len(v))
		a.be.Upload(b, v)
		return b
	}
	l := &model.LoRA{A: up(av), B: up(bv), DA: a.be.Alloc(kernels.F32, rank*in), DB: a.be.Alloc(kernels.F32, out*rank),
		Rank: rank, Scale: scaleOf(alpha, rank, a.Config.UseRSLoRA)}
	a.mods[layer][p] = &module{rank: rank, alpha: alpha, l: l}
	a.params = append(a.params,
		Param{Name: peftKey(a.cfg, layer, p, "A"), Layer: layer, Proj: p, Expert: -1, Value: l.A, Grad: l.DA, Shape: [2]int{rank, in}},
		Param{Name: peftKey(a.cfg, layer, p, "B"), Layer: layer, Proj: p, Expert: -1, Value: l.B, Grad: l.DB, Shape: [2]int{out, rank}})
}

// LoRA implements model.Adapter: the pair on projection p of layer, or nil.
func (a *Adapter) LoRA(layer int, p model.Proj) *model.LoRA {
	if layer < 0 || layer >= len(a.mods) || p >= model.NumProj {
		return nil
	}
	if m := a.mods[layer][p]; m != nil {
		return m.l
	}
	return nil
}

// Module reports the rank and alpha of projection p in layer, and whether
// it is adapted at all.
func (a *Adapter) Module(layer int, p model.Proj) (rank int, alpha float64, ok bool) {
	if l := a.LoRA(layer, p); l != nil {
		m := a.mods[layer][p]
		return m.rank, m.alpha, true
	}
	return 0, 0, false
}

// Params lists every trainable tensor in a stable order (layer, then its
// router, then projection in q, k, v, o, gate, up, down order, then
// expert, then A before B), the order optimizer state and checkpoints use.
func (a *Adapter) Params() []Param { return append([]Param(nil), a.params...) }

// NumParams is the number of trainable scalars.
func (a *Adapter) NumParams() int {
	n := 0
	for _, p := range a.params {
		n += p.Shape[0] * p.Shape[1]
	}
	return n
}

// ZeroGrad clears every gradient buffer (Backward accumulates into them).
func (a *Adapter) ZeroGrad() {
	for _, p := range a.params {
		a.be.Upload(p.Grad, make([]float32, p.Grad.Len()))
	}
}

// Free releases the adapter's buffers; the adapter must not be used after.
func (a *Adapter) Free() {
	for _, p := range a.params {
		for _, b := range []kernels.Buffer{p.Value, p.Grad} {
			if !a.views[b] {
				a.be.Free(b)
			}
		}
	}
	for _, gs := range a.grouped {
		for _, g := range gs {
			a.be.Free(g.a)
			a.be.Free(g.da)
		}
	}
	a.freeExperts()
	a.params, a.grouped, a.views, a.routers = nil, nil, nil, nil
	a.mods = make([][model.NumProj]*module, len(a.mods))
}

// download copies a parameter's values to the host.
func (a *Adapter) download(b kernels.Buffer) []float32 {
	v := make([]float32, b.Len())
	a.be.Download(v, b)
	return v
}
