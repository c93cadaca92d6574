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
// quotes both. Each counts the gather of the four logit rows from the f32
// residual stream whole (3 × 64 × 4 bytes more than the counter first
// counted it: 9,341,744 and 5,278,512).
const (
	forwardTrafficBefore = 9342512
	forwardTrafficAfter  = 5279280
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
// backend). With route not nil, a sparse model's batches record their
// routing into it when it is empty and replay it otherwise, so that two
// backends' forwards route alike where near-ties could flip.
func bf16Forward(t *testing.T, m *Model, be *cuda.Backend, route *[2][]int32) (prefill, decode []float32, tr cuda.Traffic, c cuda.Counts) {
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
	if route != nil && m.Config.SparseLayers() > 0 {
		for i, bt := range []*Batch{&b, &next} {
			if route[i] == nil {
				route[i] = make([]int32, m.Config.RoutingLen(bt.Len()))
				bt.RecordExperts = route[i]
			} else {
				bt.Experts = route[i]
			}
		}
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
	prefill, decode, tr, c := bf16Forward(t, m, be, nil)
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
	cpuPrefill, cpuDecode, _, _ := bf16Forward(t, ref, nil, nil)
	compareForwardLogits(t, [2][]float32{prefill, decode}, [2][]float32{cpuPrefill, cpuDecode}, [2]float64{forwardLogitsMaxAbsBF16, forwardLogitsNMSEBF16})
}

// compareForwardLogits holds bf16Forward's prefill and decode logits on
// emu (got) to the CPU backend's (want) within bound (max |Δ|, NMSE).
func compareForwardLogits(t *testing.T, got, want [2][]float32, bound [2]float64) {
	t.Helper()
	for i, name := range []string{"prefill", "decode"} {
		d, e := maxAbsDiff(got[i], want[i]), nmse(got[i], want[i])
		t.Logf("%s logits: max |Δ| %.3g, NMSE %.3g against the CPU backend", name, d, e)
		if d > bound[0] || e > bound[1] {
			t.Errorf("%s logits: max |Δ| %.3g, NMSE %.3g, want ≤ %g and ≤ %g", name, d, e, bound[0], bound[1])
		}
	}
}

// TestBF16ForwardLayerKindsOnEmu runs bf16Forward (a prefill into the
// sampler's paged bf16 cache, then a decode-shaped batch) of the bf16
// tiny models whose layers are not all attention + SwiGLU — the MoE, the
// DeltaNet hybrid, and bf16 copies of Qwen3.5-MoE, GLM-4.5, Nemotron-H
// and gpt-oss (tinyModelDir) — on emu, where every layer keeps bf16
// between ops (forwardAttention: the inference set rewritten with every
// layer kind's lists, the sparse layers' set too), and holds both
// logits to the CPU backend's within forwardLogitsBF16, about 3× the
// worst measured (in the comment).
func TestBF16ForwardLayerKindsOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the models under the emulator")
	}
	for _, c := range []struct {
		name   string
		asBF16 bool
		f32Of  string // as in TestBF16TraceAttentionOnEmu: keeps mixedF32 in f32
	}{{"qwen3-moe-tiny-bf16", false, ""}, {"qwen3_5-tiny-bf16", false, ""}, {"qwen3_5-moe-tiny", true, ""}, {"glm4_moe-tiny", true, ""},
		{"nemotron_h-tiny", true, ""}, {"nemotron_h-latent-tiny", true, ""}, {"gpt_oss-tiny", true, ""}, {"qwen3-moe-tiny-f32-mixed", true, "qwen3-moe-tiny"}} {
		t.Run(c.name, func(t *testing.T) {
			_, m, ref := loadEmuAndCPU(t, caseModelDir(t, c.name, c.asBF16, c.f32Of))
			if !m.Config.allBF16Layers(m.traceAttention()) {
				t.Fatalf("not every layer of %s is a bf16 layer on emu", c.name)
			}
			m, ref = m.WithAdapter(newTestAdapter(m, 2, 9)), ref.WithAdapter(newTestAdapter(ref, 2, 9))
			// The CPU's routing, recorded, replayed on emu.
			var route [2][]int32
			cpuPrefill, cpuDecode, _, _ := bf16Forward(t, ref, nil, &route)
			prefill, decode, _, _ := bf16Forward(t, m, nil, &route)
			compareForwardLogits(t, [2][]float32{prefill, decode}, [2][]float32{cpuPrefill, cpuDecode}, forwardLogitsBF16[c.name])
		})
	}
}

// forwardLogitsBF16 bounds TestBF16ForwardLayerKindsOnEmu's logits (max
// |Δ|, NMSE) per model, about 3× the worst measured, prefill and decode
// (in brackets before these layers kept bf16 between ops: f32 between
// them, the GEMMs' bf16 casts, bf16 q and caches; main at 66b79ec):
//
//	qwen3-moe-tiny-bf16  1.9e-2, 3.0e-5; 3.1e-2, 6.3e-5 (1.5e-2, 2.6e-5; 1.6e-2, 2.7e-5)
//	qwen3_5-tiny-bf16    0.13, 1.2e-3; 0.26, 2.4e-3   (6.8e-2, 4.1e-4; 7.3e-2, 3.4e-4)
//	qwen3_5-moe-tiny     0.13, 1.2e-3; 8.1e-2, 1.2e-3 (0.12, 1.5e-3; 0.15, 1.6e-3)
//	glm4_moe-tiny        2.6e-2, 6.6e-5; 4.2e-2, 1.1e-4 (1.3e-2, 2.3e-5; 3.2e-2, 6.5e-5)
//	nemotron_h-tiny      9.4e-2, 6.6e-4; 6.9e-2, 2.9e-4 (3.6e-2, 1.0e-4; 4.7e-2, 1.3e-4)
//	gpt_oss-tiny         2.9e-2, 8.2e-5; 1.8e-2, 4.9e-5 (1.5e-2, 2.6e-5; 1.8e-2, 2.8e-5)
//	nemotron_h-latent    9.3e-2, 5.1e-4; 5.6e-2, 2.9e-4
//	qwen3-moe, some f32  1.9e-2, 3.7e-5; 1.7e-2, 2.9e-5 (mixedF32; MatMul panicked before)
//
// The DeltaNet hybrid moves most, as in training (bf16TraceBounds).
var forwardLogitsBF16 = map[string][2]float64{
	"qwen3-moe-tiny-bf16":      {0.093, 1.9e-4},
	"qwen3-moe-tiny-f32-mixed": {0.058, 1.1e-4},
	"qwen3_5-tiny-bf16":        {0.77, 7.2e-3},
	"qwen3_5-moe-tiny":         {0.44, 4.8e-3},
	"glm4_moe-tiny":            {0.13, 3.3e-4},
	"nemotron_h-tiny":          {0.28, 2e-3},
	"gpt_oss-tiny":             {0.086, 2.5e-4},
	"nemotron_h-latent-tiny":   {0.28, 1.5e-3},
}
