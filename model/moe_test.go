package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// moeTestAdapter is testAdapter on attention plus a stacked adapter on
// every expert's gate/up/down and one on the router of each sparse layer.
type moeTestAdapter struct {
	*testAdapter
	experts [][NumProj]*ExpertLoRA
	routers []*LoRA
}

func (a *moeTestAdapter) ExpertLoRA(layer int, p Proj) *ExpertLoRA { return a.experts[layer][p] }
func (a *moeTestAdapter) RouterLoRA(layer int) *LoRA               { return a.routers[layer] }

func newMoETestAdapter(m *Model, rank int, seed uint64) *moeTestAdapter {
	c, be := m.Config, m.Backend
	ad := &moeTestAdapter{testAdapter: newTestAdapter(m, rank, seed), experts: make([][NumProj]*ExpertLoRA, c.NumLayers),
		routers: make([]*LoRA, c.NumLayers)}
	rng := rand.New(rand.NewPCG(seed, 2))
	rnd := func(n int) kernels.Buffer {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 0.2)
		}
		b := be.Alloc(kernels.F32, n)
		be.Upload(b, v)
		return b
	}
	for l := range c.NumLayers {
		if !c.IsSparse(l) {
			continue
		}
		ad.routers[l] = &LoRA{A: rnd(rank * c.HiddenSize), B: rnd(c.NumExperts * rank), Rank: rank, Scale: 1.5,
			DA: be.Alloc(kernels.F32, rank*c.HiddenSize), DB: be.Alloc(kernels.F32, c.NumExperts*rank)}
		for _, p := range []Proj{ProjGate, ProjUp, ProjDown} {
			ad.l[l][p] = nil // a sparse layer has no dense MLP
			in, out := c.ExpertDims(p)
			ne := c.NumExperts
			ad.experts[l][p] = &ExpertLoRA{A: rnd(ne * rank * in), B: rnd(ne * out * rank), Rank: rank, Scale: 1.5,
				DA: be.Alloc(kernels.F32, ne*rank*in), DB: be.Alloc(kernels.F32, ne*out*rank)}
		}
	}
	return ad
}

func loadTiny(t *testing.T, name string) *Model {
	t.Helper()
	m, err := Load(filepath.Join("..", "testdata", "models", name), cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// record runs an inference forward over b and returns the experts it
// routed each token to.
func record(t *testing.T, m *Model, b *Batch) []int32 {
	t.Helper()
	rb := *b
	rb.RecordExperts = make([]int32, m.Config.RoutingLen(b.Len()))
	slots, maxLen := 0, 0
	for i := range b.Slots {
		slots, maxLen = max(slots, int(b.Slots[i])+1), max(maxLen, int(b.Positions[i])+1)
	}
	cache := m.NewKVCache(slots, maxLen)
	defer cache.Free()
	if _, err := m.Logits(cache, &rb, nil); err != nil {
		t.Fatal(err)
	}
	return rb.RecordExperts
}

// TestMoELoRAGradientsFiniteDifference checks Backward's gradients of every
// attention, expert and router adapter of the Qwen3-MoE tiny model with a
// dense layer against central differences of L = Σ c·logp + 0.3 × the
// load-balancing loss, as TestLoRAGradientsFiniteDifference does for the
// dense architectures. The routing is replayed from a recording, so a
// perturbation cannot flip a top-k choice and make L discontinuous; the
// routing weights and router probabilities still move with the
// parameters.
func TestMoELoRAGradientsFiniteDifference(t *testing.T) {
	const auxCoef = 0.3
	m := loadTiny(t, "qwen3-moe-tiny-dense")
	be := m.Backend
	ad := newMoETestAdapter(m, 3, 5)
	m = m.WithAdapter(ad)
	rng := rand.New(rand.NewPCG(8, 9))
	b, targets := packedTrainBatch(rng, m.Config.VocabSize)
	b.Experts = record(t, m, b)
	c := make([]float32, b.Len())
	for i := range c {
		c[i] = float32(rng.NormFloat64())
	}
	tr, err := m.ForwardTrain(b, nil, targets)
	if err != nil {
		t.Fatal(err)
	}
	if tr.RoutingMismatch != 0 {
		t.Fatalf("replaying the model's own routing: mismatch %g, want 0", tr.RoutingMismatch)
	}
	tr.AuxCoef = auxCoef
	dlogp := be.Alloc(kernels.F32, len(c))
	be.Upload(dlogp, c)
	if err := tr.Backward(dlogp); err != nil {
		t.Fatal(err)
	}
	if !(tr.AuxLoss > 0) {
		t.Fatalf("load-balancing loss %v", tr.AuxLoss)
	}
	tr.Free()
	loss := func() float64 { return weightedLogpAux(t, m, b, targets, c, auxCoef) }
	for l := range ad.l {
		var pairs [][2]kernels.Buffer
		for p := range NumProj {
			if lr := ad.l[l][p]; lr != nil {
				pairs = append(pairs, [2]kernels.Buffer{lr.A, lr.DA}, [2]kernels.Buffer{lr.B, lr.DB})
			}
			if lr := ad.experts[l][p]; lr != nil {
				pairs = append(pairs, [2]kernels.Buffer{lr.A, lr.DA}, [2]kernels.Buffer{lr.B, lr.DB})
			}
		}
		if lr := ad.routers[l]; lr != nil {
			pairs = append(pairs, [2]kernels.Buffer{lr.A, lr.DA}, [2]kernels.Buffer{lr.B, lr.DB})
		}
		for i, pair := range pairs {
			checkDirectionalOf(t, loss, m.Backend, pair[0], pair[1], rng, fmt.Sprintf("layer %d tensor %d", l, i))
		}
	}
}

// weightedLogpAux is Σ c[t]·logp[t] + coef × the load-balancing loss.
func weightedLogpAux(t *testing.T, m *Model, b *Batch, targets []int32, c []float32, coef float64) float64 {
	tr, err := m.ForwardTrain(b, nil, targets)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	lp := make([]float32, tr.Len())
	m.Backend.Download(lp, tr.Logp)
	s := 0.0
	for i := range lp {
		s += float64(c[i]) * float64(lp[i])
	}
	aux, _, err := tr.loadBalance()
	if err != nil {
		t.Fatal(err)
	}
	return s + coef*aux
}

// checkDirectionalOf is checkDirectional for any loss of the parameters.
func checkDirectionalOf(t *testing.T, loss func() float64, be kernels.Backend, param, grad kernels.Buffer, rng *rand.Rand, what string) {
	t.Helper()
	w := make([]float32, param.Len())
	g := make([]float32, grad.Len())
	be.Download(w, param)
	be.Download(g, grad)
	dir := make([]float32, len(w))
	analytic := 0.0
	for i := range dir {
		dir[i] = float32(rng.NormFloat64())
		analytic += float64(dir[i]) * float64(g[i])
	}
	shifted := make([]float32, len(w))
	eval := func(step float64) float64 {
		for i := range w {
			shifted[i] = w[i] + float32(step)*dir[i]
		}
		be.Upload(param, shifted)
		return loss()
	}
	central := func(h float64) float64 { return (eval(h) - eval(-h)) / (2 * h) }
	const h = 2e-3
	numeric := (4*central(h/2) - central(h)) / 3 // Richardson, as checkDirectional
	be.Upload(param, w)
	if d := math.Abs(numeric - analytic); d > 1e-2*math.Abs(numeric)+1e-3 {
		t.Errorf("%s: directional derivative %.6g (backward) vs %.6g (finite difference), |Δ| %.2g", what, analytic, numeric, d)
	}
}

// TestRoutingReplayUsesRecordedExperts plants a near-tie: experts 1 and 2
// of every sparse layer get router rows that differ by ±1e-5 of a random
// direction, so their logits tie to ~1e-5 for every token. The behaviour
// model (+) records its routing; the trained model (−, as a bf16 rounding
// of the router could have it) would route the tokens where the pair
// straddles the top-k boundary to the other expert. With the recorded
// routing replayed, its training forward must use exactly the recorded
// experts — its log-probs match the behaviour model's to the size of the
// perturbation (1e-3, against 0.34 without replay) — and report the fraction of tokens recomputation flips.
func TestRoutingReplayUsesRecordedExperts(t *testing.T) {
	const delta = 1e-5
	plant := func(sign float64) *Model {
		m := loadTiny(t, "qwen3-moe-tiny")
		c, be := m.Config, m.Backend
		rng := rand.New(rand.NewPCG(21, 22))
		for l := range c.NumLayers {
			r := m.W.Layers[l].MoE.Router
			w := make([]float32, r.Len())
			be.Download(w, r)
			h := c.HiddenSize
			for i := range h {
				w[2*h+i] = w[1*h+i] + float32(sign*delta*rng.NormFloat64())
			}
			be.Upload(r, w)
		}
		return m
	}
	behaviour, trained := plant(+1), plant(-1)
	rng := rand.New(rand.NewPCG(3, 4))
	var b Batch
	ids := randomIDs(rng, 65, 512)
	b.Add(0, 0, ids[:64]...)
	targets := ids[1:]
	recorded := record(t, behaviour, &b)
	if fresh := record(t, trained, &b); equalInts(fresh, recorded) {
		t.Fatal("the planted near-tie flips no routing: the test plants nothing")
	}
	logp := func(m *Model, experts []int32) ([]float32, float64) {
		rb := b
		rb.Experts = experts
		tr, err := m.ForwardTrain(&rb, nil, targets)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Free()
		lp := make([]float32, tr.Rows())
		m.Backend.Download(lp, tr.Logp)
		return lp, tr.RoutingMismatch
	}
	want, _ := logp(behaviour, nil)
	replayed, mismatch := logp(trained, recorded)
	free, _ := logp(trained, nil)
	// The routers differ by 2·delta per element, ~2e-4 on the logits: the
	// replayed log-probs move by about that; a flipped route moves them
	// by ~0.3.
	if d := maxAbsDiff(replayed, want); d > 1e-3 {
		t.Errorf("with the routing replayed, log-probs differ from the behaviour model's by %.3g > 1e-3", d)
	}
	if d := maxAbsDiff(free, want); d < 3e-2 {
		t.Errorf("without replay the flipped routes move the log-probs by only %.3g: the plant is too weak to test replay", d)
	}
	if mismatch <= 0 || mismatch >= 1 {
		t.Errorf("RoutingMismatch %g: want the fraction of tokens recomputation flips, in (0, 1)", mismatch)
	}
	// The routing a replayed forward records is the replayed one.
	rb := b
	rb.Experts = recorded
	if got := record(t, trained, &rb); !equalInts(got, recorded) {
		t.Error("a forward replaying a routing recorded different experts")
	}
	t.Logf("recomputation flips %.3g of the tokens; replayed log-probs within %.2g of the behaviour model's (%.2g without replay)",
		mismatch, maxAbsDiff(replayed, want), maxAbsDiff(free, want))
}

func equalInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRoutingBatchErrors: a replay of the wrong length or naming an
// expert the model lacks is an error, as is a routing on a dense model.
func TestRoutingBatchErrors(t *testing.T) {
	m := loadTiny(t, "qwen3-moe-tiny")
	var b Batch
	b.Add(0, 0, 1, 2, 3)
	b.Experts = make([]int32, 5)
	if _, err := m.ForwardTrain(&b, nil, []int32{1, 2, 3}); err == nil {
		t.Error("Experts of the wrong length accepted")
	}
	b.Experts = make([]int32, m.Config.RoutingLen(3))
	b.Experts[4] = 99
	if _, err := m.ForwardTrain(&b, nil, []int32{1, 2, 3}); err == nil {
		t.Error("Experts naming expert 99 of 8 accepted")
	}
	d := loadTiny(t, "qwen3-tiny")
	b.Experts = []int32{0}
	if _, err := d.ForwardTrain(&b, nil, []int32{1, 2, 3}); err == nil {
		t.Error("a routing on a dense model accepted")
	}
}
