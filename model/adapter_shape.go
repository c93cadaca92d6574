package model

// AdapterShape is an adapter as the activation sizes see it: the rank of
// each adapted projection of each layer, which sets the width of the x·Aᵀ
// a forward keeps and of the dy·B its backward writes. The allocators
// read it from the model's adapter (Model.adapterShape); the estimate
// builds one from a [lora] table (UniformAdapterShape) without a Model,
// and both size the same buffers by it.
type AdapterShape struct {
	// Ranks[l][p] is the rank of layer l's adapter of p (0: not adapted):
	// attention's, DeltaNet's, a dense MLP's and a shared expert's.
	Ranks [][NumProj]int
	// Experts[l][p] is the rank of a sparse layer's adapter of the
	// experts' projection p (gate, up, down).
	Experts [][NumProj]int
	// Router[l] is the rank of a sparse layer's router adapter.
	Router []int
}

// UniformAdapterShape is an adapter of one rank on projs (each layer's
// that it has: Config.HasProj), and on the routers of the sparse layers
// when routers is set: lora's layout, where a sparse layer's MLP
// projections are its experts'.
func UniformAdapterShape(c *Config, rank int, projs []Proj, routers bool) AdapterShape {
	s := newAdapterShape(c.NumLayers)
	for l := range c.NumLayers {
		for _, p := range projs {
			switch {
			case !c.HasProj(l, p):
			case c.IsSparse(l) && p.IsMLP():
				s.Experts[l][p] = rank
			default:
				s.Ranks[l][p] = rank
			}
		}
		if routers && c.IsSparse(l) {
			s.Router[l] = rank
		}
	}
	return s
}

func newAdapterShape(layers int) AdapterShape {
	return AdapterShape{Ranks: make([][NumProj]int, layers), Experts: make([][NumProj]int, layers), Router: make([]int, layers)}
}

// adapterShape is the shape of m's adapter (all zero without one).
func (m *Model) adapterShape() AdapterShape {
	c := m.Config
	s := newAdapterShape(c.NumLayers)
	if m.Adapter == nil {
		return s
	}
	for l := range c.NumLayers {
		for p := range NumProj {
			if lr := m.lora(l, p); lr != nil {
				s.Ranks[l][p] = lr.Rank
			}
			if p.IsMLP() && c.IsSparse(l) {
				if lr := m.expertLoRA(l, p); lr != nil {
					s.Experts[l][p] = lr.Rank
				}
			}
		}
		if c.IsSparse(l) {
			if lr := m.routerLoRA(l); lr != nil {
				s.Router[l] = lr.Rank
			}
		}
	}
	return s
}

// rank is layer l's rank of p, or with l < 0 the largest over the layers
// (the inference set serves them all).
func (s *AdapterShape) rank(l int, p Proj) int {
	if l >= 0 {
		return s.Ranks[l][p]
	}
	r := 0
	for i := range s.Ranks {
		r = max(r, s.Ranks[i][p])
	}
	return r
}

// groupRanks is Σ rank over layer l's adapted members of g: the columns
// of the group's one x·Aᵀ.
func (s *AdapterShape) groupRanks(l int, g group) int {
	r := 0
	for _, p := range groupProjs[g] {
		r += s.Ranks[l][p]
	}
	return r
}

// groupRank is groupRanks of layer l, or with l < 0 the largest over
// the layers.
func (s *AdapterShape) groupRank(l int, g group) int {
	if l >= 0 {
		return s.groupRanks(l, g)
	}
	r := 0
	for i := range s.Ranks {
		r = max(r, s.groupRanks(i, g))
	}
	return r
}

// expertRank is layer l's expert adapter rank of p, or with l < 0 the
// largest over the sparse layers.
func (s *AdapterShape) expertRank(l int, p Proj) int {
	if l >= 0 {
		return s.Experts[l][p]
	}
	r := 0
	for i := range s.Experts {
		r = max(r, s.Experts[i][p])
	}
	return r
}

// routerRank is layer l's router adapter rank, or with l < 0 the largest.
func (s *AdapterShape) routerRank(l int) int {
	if l >= 0 {
		return s.Router[l]
	}
	r := 0
	for _, v := range s.Router {
		r = max(r, v)
	}
	return r
}

// TrainsRouter reports whether some router is adapted: then a
// checkpointed sparse layer keeps its router's logits (newMoEActs).
func (s *AdapterShape) TrainsRouter() bool { return s.routerRank(-1) > 0 }
