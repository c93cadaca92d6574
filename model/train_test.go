package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// testAdapter puts a LoRA of the given rank on every projection of every
// layer, with random A and B (B non-zero so every path carries gradient).
type testAdapter struct{ l [][NumProj]*LoRA }

func (t *testAdapter) LoRA(layer int, p Proj) *LoRA { return t.l[layer][p] }

func newTestAdapter(m *Model, rank int, seed uint64) *testAdapter {
	rng := rand.New(rand.NewPCG(seed, 1))
	be := m.Backend
	ad := &testAdapter{l: make([][NumProj]*LoRA, m.Config.NumLayers)}
	rnd := func(n int, std float64) kernels.Buffer {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * std)
		}
		b := be.Alloc(kernels.F32, n)
		be.Upload(b, v)
		return b
	}
	for l := range ad.l {
		for p := range NumProj {
			if !m.Config.HasProj(l, p) {
				continue
			}
			in, out := m.Config.Dims(p)
			ad.l[l][p] = &LoRA{A: rnd(rank*in, 0.2), B: rnd(out*rank, 0.2), Rank: rank, Scale: 1.5,
				DA: be.Alloc(kernels.F32, rank*in), DB: be.Alloc(kernels.F32, out*rank)}
		}
	}
	return ad
}

// packedTrainBatch is two sequences of different lengths; targets are the
// next tokens (the last token of each sequence predicts an arbitrary id).
func packedTrainBatch(rng *rand.Rand, vocab int) (*Batch, []int32) {
	var b Batch
	var targets []int32
	for s, n := range []int{9, 6} {
		ids := randomIDs(rng, n+1, vocab)
		b.Add(s, 0, ids[:n]...)
		targets = append(targets, ids[1:]...)
	}
	return &b, targets
}

// weightedLogp returns Σ c[t]·logp[t] for the model's current parameters.
func weightedLogp(t *testing.T, m *Model, b *Batch, targets []int32, c []float32) float64 {
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
	return s
}

// TestLoRAGradientsFiniteDifference checks Backward's LoRA gradients of
// L = Σ c·logp against central differences of L along random directions,
// for every architecture and every projection. The float32 forward puts
// about 1e-6 of noise on each log-prob, ~5e-4 on the extrapolated
// difference quotient, so the bar is |Δ| ≤ 1e-2·|fd| + 1e-3. (The tight check is the
// PyTorch autograd golden.)
func TestLoRAGradientsFiniteDifference(t *testing.T) {
	for _, arch := range []string{"qwen3", "qwen2", "llama"} {
		t.Run(arch, func(t *testing.T) {
			be := cpu.New()
			m := NewRandom(tinyConfig(arch), be, 11)
			ad := newTestAdapter(m, 3, 5)
			m = m.WithAdapter(ad)
			rng := rand.New(rand.NewPCG(8, 9))
			b, targets := packedTrainBatch(rng, m.Config.VocabSize)
			c := make([]float32, b.Len())
			for i := range c {
				c[i] = float32(rng.NormFloat64())
			}
			tr, err := m.ForwardTrain(b, nil, targets)
			if err != nil {
				t.Fatal(err)
			}
			dlogp := be.Alloc(kernels.F32, len(c))
			be.Upload(dlogp, c)
			if err := tr.Backward(dlogp); err != nil {
				t.Fatal(err)
			}
			tr.Free()
			for l := range ad.l {
				for p := range NumProj {
					lr := ad.l[l][p]
					if lr == nil {
						continue
					}
					for _, pair := range [][2]kernels.Buffer{{lr.A, lr.DA}, {lr.B, lr.DB}} {
						checkDirectional(t, m, b, targets, c, pair[0], pair[1], rng, l, p)
					}
				}
			}
		})
	}
}

func checkDirectional(t *testing.T, m *Model, b *Batch, targets []int32, c []float32, param, grad kernels.Buffer, rng *rand.Rand, l int, p Proj) {
	t.Helper()
	be := m.Backend
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
		return weightedLogp(t, m, b, targets, c)
	}
	central := func(h float64) float64 { return (eval(h) - eval(-h)) / (2 * h) }
	// Richardson extrapolation cancels the h² term of the central difference,
	// which is large here: dir moves every element of A or B at once.
	const h = 2e-3
	numeric := (4*central(h/2) - central(h)) / 3
	be.Upload(param, w)
	if d := math.Abs(numeric - analytic); d > 1e-2*math.Abs(numeric)+1e-3 {
		t.Errorf("layer %d %s: directional derivative %.6g (backward) vs %.6g (finite difference), |Δ| %.2g", l, p, analytic, numeric, d)
	}
}

// TestZeroUpstreamGivesZeroGradient: with dlogp = 0 (a zero-advantage
// batch), every LoRA gradient stays exactly zero.
func TestZeroUpstreamGivesZeroGradient(t *testing.T) {
	be := cpu.New()
	m := NewRandom(tinyConfig("qwen3"), be, 2)
	ad := newTestAdapter(m, 2, 3)
	m = m.WithAdapter(ad)
	b, targets := packedTrainBatch(rand.New(rand.NewPCG(1, 1)), m.Config.VocabSize)
	tr, err := m.ForwardTrain(b, nil, targets)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	if err := tr.Backward(be.Alloc(kernels.F32, b.Len())); err != nil {
		t.Fatal(err)
	}
	for l := range ad.l {
		for p := range NumProj {
			if ad.l[l][p] == nil {
				continue
			}
			for _, g := range []kernels.Buffer{ad.l[l][p].DA, ad.l[l][p].DB} {
				v := make([]float32, g.Len())
				be.Download(v, g)
				for _, x := range v {
					if x != 0 {
						t.Fatalf("layer %d %s: gradient %v with zero upstream", l, p, x)
					}
				}
			}
		}
	}
}

// TestTrainingForwardMatchesInference: the trace's log-probs equal those of
// the inference forward.
func TestTrainingForwardMatchesInference(t *testing.T) {
	be := cpu.New()
	m := NewRandom(tinyConfig("llama"), be, 4)
	m = m.WithAdapter(newTestAdapter(m, 2, 9))
	ids := []int32{4, 8, 15, 16, 23, 42, 7}
	want, err := m.TokenLogprobs(ids, 1)
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Add(0, 0, ids[:len(ids)-1]...)
	tr, err := m.ForwardTrain(&b, nil, ids[1:])
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	got := make([]float32, tr.Len())
	be.Download(got, tr.Logp)
	if d := maxAbsDiff(got, want); d > 1e-5 {
		t.Errorf("training vs inference log-probs: max |Δ| = %g", d)
	}
}
