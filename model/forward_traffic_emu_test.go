package model

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// forwardTrafficBefore and forwardTrafficAfter are the activation bytes
// (cuda.Traffic) of TestBF16ForwardOnEmu's prefill of qwen3-tiny-bf16:
// before, f32 between ops (the GEMMs' bf16 casts, f32 q and attention
// output: main at c4e3367), and now, with the activations between ops in
// bf16 (forwardAttention): 56.5 % of the bytes before. BENCHMARKS.md
// quotes both.
const (
	forwardTrafficBefore = 9341744
	forwardTrafficAfter  = 5278512
)

// The bounds of the bf16 forward's logits on emu against the CPU
// backend's (bf16 weights widened, f32 everywhere), prefill and decode
// batch: max |Δ| and NMSE, about 3× the worst measured. Measured with
// bf16 activations between ops (before, f32 between ops):
//
//	prefill  max|Δ| 3.7e-2, NMSE 1.1e-4 (3.3e-2, 7.0e-5)
//	decode   max|Δ| 3.0e-2, NMSE 6.7e-5 (2.3e-2, 5.3e-5)
const (
	forwardLogitsMaxAbsBF16 = 0.11
	forwardLogitsNMSEBF16   = 3.3e-4
)

// forwardSeqs, forwardLen: the prefill of TestBF16ForwardOnEmu.
const forwardSeqs, forwardLen = 4, 64

// bf16Forward runs on m a prefill of forwardSeqs sequences of forwardLen
// tokens into a paged cache (the sampler's: the backend's KV dtype),
// its logits at each sequence's last token, then a decode-shaped batch
// of one token per sequence; it returns both logits and the prefill's
// activation bytes and device counts where be counts them (nil: the CPU
// backend).
func bf16Forward(t *testing.T, m *Model, be *cuda.Backend) (prefill, decode []float32, tr cuda.Traffic, c cuda.Counts) {
	t.Helper()
	cache, err := m.NewPagedKVCache(forwardSeqs, forwardLen+1, 16, forwardSeqs*BlocksFor(forwardLen+1, 16))
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Free()
	rng := rand.New(rand.NewPCG(7, 8))
	var b, next Batch
	var rows []int32
	for s := range forwardSeqs {
		ids := randomIDs(rng, forwardLen+1, m.Config.VocabSize)
		b.Add(s, 0, ids[:forwardLen]...)
		next.Add(s, forwardLen, ids[forwardLen])
		rows = append(rows, int32(b.Len()-1))
	}
	var c0 cuda.Counts
	if be != nil {
		c0, tr = be.Counts(), be.CountTraffic()
	}
	prefill, err = m.Logits(cache, &b, rows)
	if be != nil {
		be.StopTraffic()
		c = be.Counts().Sub(c0)
	}
	if err != nil {
		t.Fatal(err)
	}
	decode, err = m.Logits(cache, &next, nil)
	if err != nil {
		t.Fatal(err)
	}
	return prefill, decode, tr, c
}

// TestBF16ForwardOnEmu runs Forward of the bf16 dense tiny model (rank-2
// adapter on every projection) on emu: a prefill and a decode-shaped
// batch, whose attention must take the tensor-core kernels (a bf16 q:
// forwardAttention) and never the f32 flash or split-KV ones; the
// prefill's activation bytes are held to forwardTrafficAfter, and both
// logits to the CPU backend's within the bounds above.
func TestBF16ForwardOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model under the emulator")
	}
	const name = "qwen3-tiny-bf16"
	be := emu.New()
	defer be.Close()
	m, err := Load(filepath.Join("..", "testdata", "models", name), be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	ref := loadTiny(t, name)
	defer ref.Free()
	ad := newTestAdapter(m, 2, 9)
	m, ref = m.WithAdapter(ad), ref.WithAdapter(newTestAdapter(ref, 2, 9))
	tagWeights(be, m, ad)
	before := attentionLaunches(be, m)
	prefill, decode, tr, c := bf16Forward(t, m, be)
	after := attentionLaunches(be, m)
	if n := after["tc forward"] - before["tc forward"]; n != 2*int64(m.Config.NumLayers) {
		t.Errorf("%d launches of the tensor-core forward, want one per layer and batch, %d", n, 2*m.Config.NumLayers)
	}
	if n := after["f32"] - before["f32"]; n != 0 {
		t.Errorf("%d launches of the f32 flash or split-KV kernels, want none", n)
	}
	logTraffic(t, name+" prefill", tr, c)
	t.Logf("%.1f %% of the %d activation bytes before", 100*float64(tr.Total())/float64(forwardTrafficBefore), forwardTrafficBefore)
	if got := tr.Total(); got > forwardTrafficAfter {
		t.Errorf("prefill: %d activation bytes, more than the %d measured with bf16 activations between ops", got, forwardTrafficAfter)
	}
	cpuPrefill, cpuDecode, _, _ := bf16Forward(t, ref, nil)
	for _, c := range []struct {
		name      string
		got, want []float32
	}{{"prefill", prefill, cpuPrefill}, {"decode", decode, cpuDecode}} {
		d, e := maxAbsDiff(c.got, c.want), nmse(c.got, c.want)
		t.Logf("%s logits: max |Δ| %.3g, NMSE %.3g against the CPU backend", c.name, d, e)
		if d > forwardLogitsMaxAbsBF16 || e > forwardLogitsNMSEBF16 {
			t.Errorf("%s logits: max |Δ| %.3g, NMSE %.3g, want ≤ %g and ≤ %g", c.name, d, e, forwardLogitsMaxAbsBF16, forwardLogitsNMSEBF16)
		}
	}
}
