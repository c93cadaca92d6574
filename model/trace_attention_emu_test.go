package model

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// traceBounds bound a bf16 model's training trace on emu — bf16 GEMMs
// (as internal/modeltest's bf16 bounds), bf16 q and caches on the
// tensor-core flash kernels (traceAttention) and a bf16 layer's
// activations between ops in bf16 (trace_acts.go) — against the CPU
// backend's (bf16 weights widened, f32 everywhere) on
// TestBF16TraceAttentionOnEmu's batch: log-probs' max |Δ| and NMSE, the
// loss's relative error, every LoRA gradient's NMSE and max |Δ| (of
// max(1, its scale)).
type traceBounds struct{ lpMax, lpNMSE, lossRel, gradNMSE, gradMax float64 }

// bf16TraceBounds are about 3× the worst measured, per model (of the
// two columns, where bf16 between ops moved a figure down). Measured
// under emu with every layer a bf16 layer (trace_acts.go; the MoE's and
// the hybrids' layers since DeltaNet, Mamba-2 and the MoE ops take bf16
// activations); in brackets the same batch with f32 between the ops of
// every layer but a dense attention + SwiGLU one (main at 66b79ec):
//
//	                     log-probs max|Δ|, NMSE           loss rel          grads NMSE, max|Δ|
//	qwen3-tiny-bf16      2.3e-2, 2.0e-6 (same)            1.3e-3 (same)     5.3e-4, 2.5e-2 (same)
//	qwen3_5-tiny-bf16    7.4e-2, 1.5e-5 (3.6e-2, 4.4e-6)  4.5e-3 (2.3e-3)  4.8e-2, 0.21 (6.4e-3, 8.9e-2)
//	qwen3-moe-tiny-bf16  2.2e-2, 8.9e-7 (9.0e-3, 3.2e-7)  1.2e-3 (4.8e-4)  7.8e-4, 3.0e-2 (2.2e-4, 1.9e-2)
//	qwen3_5-moe-tiny     0.17, 6.1e-5 (6.1e-2, 1.0e-5)    7.0e-4 (4.1e-3)  0.21, 0.68 (2.8e-2, 0.29)
//	glm4_moe-tiny        2.4e-2, 1.9e-6 (3.1e-2, 2.4e-6)  6.6e-4 (5.2e-4)  1.5e-2, 8.9e-2 (6.9e-3, 6.4e-2)
//	nemotron_h-tiny      3.8e-2, 4.1e-6 (2.9e-2, 2.2e-6)  3.9e-3 (1.8e-3)  5.9e-3, 0.11 (3.9e-3, 7.1e-2)
//	gpt_oss-tiny         1.9e-2, 1.6e-6 (1.1e-2, 3.9e-7)  4.1e-4 (9.2e-4)  2.4e-3, 6.7e-2 (5.3e-4, 2.2e-2)
//	nemotron_h-latent    4.0e-2, 3.4e-6 (4.9e-2, 3.9e-6)  1.9e-3 (9.8e-4)  8.6e-3, 0.15 (9.6e-3, 0.13)
//	qwen3-moe, some f32   8.3e-2, 5.8e-6                  2.3e-3           9.7e-4, 2.9e-2
//
// (the last five as bf16 copies of their f32 tiny models, tinyModelDir;
// the latent MoE's "before" with its other layers bf16 already;
// gpt-oss's with its sinks, o_proj bias, expert biases and clamped SwiGLU
// bf16 layers since they take bf16 too; the last keeps mixedF32 in f32,
// where MatMul panicked on a bf16 A or C beside an f32 B before, and an
// f32 router alone measured 6.6e-2, 4.2e-6; 1.9e-3; 9.8e-4, 3.1e-2).
// With f32 q and caches on the f32 flash kernels (and the shrinks on the
// f32 rows) qwen3-tiny-bf16 measured 8.3e-3, 3.0e-7; 3.2e-4; 1.4e-4,
// 1.2e-2. The bf16 GEMMs' rounding dominates the dense models; rounding
// q, k, v and the probabilities to bf16 adds up to 4× on
// qwen3-tiny-bf16's gradients, and the activations between ops in bf16
// about 1.7× more. A DeltaNet's gated delta rule is the most sensitive:
// with the CPU's f32 as reference, qwen3_5-tiny-bf16's worst gradient
// NMSE is 6.4e-3 with its DeltaNet layers f32 between ops, 1.4e-2 with
// only their norms and MLPs bf16, 2.3e-2 with the conv's output (the
// rule's q, k, v) bf16 too, and 4.8e-2 with in_proj_qkv's output too —
// the rounding PyTorch's bf16 model takes at the same places (its
// chunked kernel reads bf16 q, k, v); the worst gradients are in_proj_b's
// (the write strength β), whose error v − Sᵀk cancels. Qwen3.5-MoE's
// MoE layers compound it: 2.8e-2 with one bf16 layer, 0.21 with all
// four. The tensor-core backward without the softmax's D term moves
// qwen3-tiny-bf16's gradients by NMSE 0.87 (internal/modeltest
// TestPlantedFullModel).
var bf16TraceBounds = map[string]traceBounds{
	"qwen3-tiny-bf16":          {0.07, 6e-6, 4e-3, 1.6e-3, 7.5e-2},
	"qwen3_5-tiny-bf16":        {0.22, 4.5e-5, 1.4e-2, 0.15, 0.63},
	"qwen3-moe-tiny-bf16":      {0.07, 2.7e-6, 3.6e-3, 2.4e-3, 9e-2},
	"qwen3_5-moe-tiny":         {0.51, 1.8e-4, 1.2e-2, 0.64, 2.0},
	"glm4_moe-tiny":            {0.093, 7.2e-6, 2e-3, 4.5e-2, 0.27},
	"nemotron_h-tiny":          {0.11, 1.2e-5, 1.2e-2, 1.8e-2, 0.32},
	"gpt_oss-tiny":             {0.058, 4.9e-6, 2.8e-3, 7.2e-3, 0.2},
	"nemotron_h-latent-tiny":   {0.15, 1.2e-5, 5.7e-3, 2.9e-2, 0.45},
	"qwen3-moe-tiny-f32-mixed": {0.25, 1.8e-5, 7e-3, 2.9e-3, 9e-2},
}

// mixedF32 are the tensors qwen3-moe-tiny-f32-mixed keeps in f32 in its
// bf16 copy, as checkpoints that ship some weights in f32 do: the router
// (HF's routers are often f32), o_proj and the experts' down_proj, so a
// bf16 layer's activations meet f32 weights in MatMul (bf16 A and C) and
// in the grouped GEMM.
var mixedF32 = []string{"mlp.gate.weight", "o_proj.weight", "down_proj.weight"}

// TestBF16TraceAttentionOnEmu trains the bf16 tiny models (dense with q/k
// norms, the hybrid Qwen3.5 with its gated attention at head dim 32 and
// a DeltaNet, the MoE; bf16 copies of Qwen3.5-MoE with its gated shared
// expert, GLM-4.5 with sigmoid routing and a dense first layer,
// Nemotron-H with Mamba-2, relu² and relu² experts, and gpt-oss with
// sinks, sliding windows and biased clamped-SwiGLU experts, and the
// latent MoE of Nemotron-3-Super) one
// micro-batch on emu — groups sharing prompts,
// so the shared-prefix forward runs, under selective recompute, so the
// backward reruns attention — and requires that the trace's attention
// took the tensor-core kernels (q written in bf16 by AttentionInputs,
// forward, dQ and dK/dV passes) and never the f32 flash or split-KV
// ones, with log-probs, the loss and every LoRA gradient within the
// bounds above of the CPU backend's. The f32 qwen3-tiny keeps the f32
// flash kernels.
func TestBF16TraceAttentionOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("trains under the emulator")
	}
	for _, c := range []struct {
		name   string
		tc     bool
		asBF16 bool   // a bf16 copy of the f32 tiny model (tinyModelDir)
		f32Of  string // with asBF16: the f32 model whose copy keeps mixedF32 in f32
	}{{"qwen3-tiny-bf16", true, false, ""}, {"qwen3_5-tiny-bf16", true, false, ""}, {"qwen3-moe-tiny-bf16", true, false, ""},
		{"qwen3_5-moe-tiny", true, true, ""}, {"glm4_moe-tiny", true, true, ""}, {"nemotron_h-tiny", true, true, ""}, {"gpt_oss-tiny", true, true, ""},
		{"nemotron_h-latent-tiny", true, true, ""}, {"qwen3-moe-tiny-f32-mixed", true, true, "qwen3-moe-tiny"}, {"qwen3-tiny", false, false, ""}} {
		t.Run(c.name, func(t *testing.T) {
			be, m, ref := loadEmuAndCPU(t, caseModelDir(t, c.name, c.asBF16, c.f32Of))
			if c.f32Of != "" {
				w := m.W.Layers[m.Config.NumLayers-1]
				for name, b := range map[string]kernels.Buffer{"router": w.MoE.Router, "o_proj": w.O, "experts' down_proj": w.MoE.Down, "q/k/v": w.QKV} {
					if want := map[bool]kernels.DType{true: kernels.BF16, false: kernels.F32}[name == "q/k/v"]; b.DType() != want {
						t.Fatalf("the copy's %s is %v, want %v", name, b.DType(), want)
					}
				}
			}
			want := kernels.F32
			if c.tc {
				want = kernels.BF16
			}
			if got := m.traceAttention(); got != want {
				t.Fatalf("emu: the trace's attention dtype is %v, want %v", got, want)
			}
			if got := ref.traceAttention(); got != kernels.F32 {
				t.Fatalf("cpu: the trace's attention dtype is %v, want f32", got)
			}
			ad, cpuAd := newTestAdapter(m, 2, 9), newTestAdapter(ref, 2, 9)
			m, ref = m.WithAdapter(ad), ref.WithAdapter(cpuAd)
			m.Recompute, ref.Recompute = RecomputeSelective, RecomputeSelective
			rng := rand.New(rand.NewPCG(5, 6))
			b, rows, targets, shares := groupBatch(rng, m.Config.VocabSize, 2, 3, 20)
			for _, s := range shares {
				b.Share(s[0], s[1], s[2])
			}
			if m.Config.SparseLayers() > 0 {
				// Both replay the CPU backend's routing: a near-tie between
				// experts may route either way under bf16 activations.
				b.Experts = record(t, ref, b)
			}
			dlogp := make([]float32, len(rows))
			for i := range dlogp {
				dlogp[i] = float32(rng.NormFloat64())
			}
			before := attentionLaunches(be, m)
			got := trainGrads(t, m, ad, b, rows, targets, dlogp)
			after := attentionLaunches(be, m)
			for k, n := range after {
				n -= before[k]
				if c.tc == (k == "f32") && n != 0 || c.tc != (k == "f32") && n == 0 {
					t.Errorf("%d launches of the %s kernels", n, k)
				}
			}
			if !c.tc {
				return
			}
			cpuGot := trainGrads(t, ref, cpuAd, b, rows, targets, dlogp)
			compareTrace(t, c.name, got, cpuGot, dlogp)
		})
	}
}

// attentionLaunches counts the training attention's launches by kind:
// the tensor-core forward, dQ and dK/dV passes and AttentionInputs' bf16
// q ("tc …"), and every f32 flash, split-KV and shared-prefix kernel
// ("f32").
func attentionLaunches(be *cuda.Backend, m *Model) map[string]int64 {
	hd := 64 // the tensor-core template the tiny models' head dims pad to
	for hd < m.Config.HeadDim {
		hd *= 2
	}
	n := map[string]int64{
		"tc forward": be.Launched("attention_flash_tc_hd" + strconv.Itoa(hd)),
		"tc dQ":      be.Launched("attention_flash_tc_dq_hd" + strconv.Itoa(hd)),
		"tc dK/dV":   be.Launched("attention_flash_tc_dkdv_hd" + strconv.Itoa(hd) + "_dkdv"),
		// Named for the norms' dtype: bf16, or f32 (Qwen3.5's
		// zero-centred norms, stored as 1 + w).
		"tc q": be.Launched("attention_inputs_wbf16_kvbf16_qbf16") + be.Launched("attention_inputs_f32_kvbf16_qbf16"),
	}
	for _, kv := range []string{"f32", "bf16"} {
		for _, fhd := range []int{16, 32, 64, 128} {
			for _, k := range []string{"attention_flash_hd", "attention_flash_dq_hd", "attention_flash_dkdv_hd"} {
				n["f32"] += be.Launched(k + strconv.Itoa(fhd) + "_" + kv)
			}
		}
		for dpl := 1; dpl <= 4; dpl++ {
			for _, k := range []string{"attention_decode_dpl", "attention_prefix_dpl", "attention_suffix_dpl"} {
				n["f32"] += be.Launched(k + strconv.Itoa(dpl) + "_" + kv)
			}
		}
	}
	return n
}

// caseModelDir is a bf16 test case's model: the bf16 copy of the f32
// tiny model f32Of that keeps mixedF32 in f32 when f32Of is set, else
// tinyModelDir's name (asBF16: its bf16 copy).
func caseModelDir(t *testing.T, name string, asBF16 bool, f32Of string) string {
	t.Helper()
	if f32Of != "" {
		return tinyModelDir(t, f32Of, true, mixedF32...)
	}
	return tinyModelDir(t, name, asBF16)
}

// tinyModelDir is the directory of the named tiny model, or with asBF16
// of a copy of it with every tensor rounded to bf16 (a bf16 checkpoint
// of a family whose committed tiny model is f32) but those named by a
// suffix in keepF32.
func tinyModelDir(t *testing.T, name string, asBF16 bool, keepF32 ...string) string {
	t.Helper()
	dir := filepath.Join("..", "testdata", "models", name)
	if !asBF16 {
		return dir
	}
	out := t.TempDir()
	if err := tinymodel.WriteBF16Copy(out, dir, keepF32...); err != nil {
		t.Fatal(err)
	}
	return out
}

// loadEmuAndCPU loads the model in dir on a fresh emu backend and on the
// CPU backend, freed (and the backend closed) when the test ends.
func loadEmuAndCPU(t *testing.T, dir string) (*cuda.Backend, *Model, *Model) {
	t.Helper()
	be := emu.New()
	t.Cleanup(func() { be.Close() })
	m, err := Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Free)
	ref, err := Load(dir, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ref.Free)
	return be, m, ref
}

// compareTrace holds got (emu) to want (cpu) within the bf16 trace
// bounds, logging the distances.
func compareTrace(t *testing.T, name string, got, want traced, dlogp []float32) {
	t.Helper()
	b, ok := bf16TraceBounds[name]
	if !ok {
		t.Fatalf("no bf16 trace bounds for %s", name)
	}
	lpMax, lpNMSE := maxAbsDiff(got.logp, want.logp), nmse(got.logp, want.logp)
	var loss, cpuLoss float64
	for i, d := range dlogp {
		loss += float64(d) * float64(got.logp[i])
		cpuLoss += float64(d) * float64(want.logp[i])
	}
	lossRel := math.Abs(loss-cpuLoss) / math.Abs(cpuLoss)
	if lpMax > b.lpMax || lpNMSE > b.lpNMSE {
		t.Errorf("log-probs: max |Δ| %.3g, NMSE %.3g against the CPU backend, want ≤ %g and ≤ %g", lpMax, lpNMSE, b.lpMax, b.lpNMSE)
	}
	if !(lossRel <= b.lossRel) {
		t.Errorf("loss Σ dlogp·logp %.6g, CPU %.6g: rel %.3g > %g", loss, cpuLoss, lossRel, b.lossRel)
	}
	var gNMSE, gMax float64
	for k := range want.grads {
		e := nmse(got.grads[k], want.grads[k])
		d := maxAbsDiff(got.grads[k], want.grads[k]) / max(1, maxAbs(want.grads[k]))
		if e > b.gradNMSE || d > b.gradMax {
			t.Errorf("gradient %d: NMSE %.3g, max |Δ| %.3g against the CPU backend, want ≤ %g and ≤ %g", k, e, d, b.gradNMSE, b.gradMax)
		}
		gNMSE, gMax = max(gNMSE, e), max(gMax, d)
	}
	t.Logf("against the CPU backend: log-probs max |Δ| %.3g, NMSE %.3g; loss rel %.3g; %d LoRA gradients, worst NMSE %.3g, max |Δ| %.3g (of max(1, scale))",
		lpMax, lpNMSE, lossRel, len(want.grads), gNMSE, gMax)
}

// TestBF16TraceBytesOnEmu counts one train micro-batch of qwen3-tiny-bf16
// on emu (4 sequences of 64 tokens, every row scored, a rank-2 adapter on
// every projection, no recompute): the bytes the tensor-core attention's
// cp.async loads request (emu's GRPO_COUNT_READ), which must equal the
// traffic walk's for the same shape (kernels/emu
// TestAttentionTrafficTable, "qwen3-tiny, 4 × 64"), and what the trace
// allocates for q and its KV cache in bf16 against f32. BENCHMARKS.md
// ("Training attention of a bf16 model") quotes the log.
func TestBF16TraceBytesOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("trains under the emulator")
	}
	d := emu.NewDevice()
	be := cuda.New(d)
	defer be.Close()
	m, err := Load(filepath.Join("..", "testdata", "models", "qwen3-tiny-bf16"), be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	ad := newTestAdapter(m, 2, 9)
	m = m.WithAdapter(ad)
	rng := rand.New(rand.NewPCG(3, 4))
	var b Batch
	var targets []int32
	const seqs, seqLen = 4, 64
	for s := range seqs {
		ids := randomIDs(rng, seqLen+1, m.Config.VocabSize)
		b.Add(s, 0, ids[:seqLen]...)
		targets = append(targets, ids[1:]...)
	}
	dlogp := make([]float32, b.Len())
	for i := range dlogp {
		dlogp[i] = float32(rng.NormFloat64())
	}
	tc := []string{"attention_flash_tc_hd64", "attention_flash_tc_dq_hd64", "attention_flash_tc_dkdv_hd64_dkdv"}
	read := func() (n uint64) {
		for _, k := range tc {
			n += d.ReadBytes(k)
		}
		return n
	}
	r0, c0 := read(), be.Counts()
	trainGrads(t, m, ad, &b, nil, targets, dlogp)
	cp, counts := read()-r0, be.Counts().Sub(c0)
	// The walk's cp.async bytes of this micro-batch, both layers.
	const walk = 1048576
	if cp != walk {
		t.Errorf("the tensor-core attention's cp.async loads requested %d bytes, the traffic walk says %d", cp, walk)
	}
	c, n := m.Config, b.Len()
	q := int64(n * c.NumHeads * c.HeadDim)
	cache := int64(c.TraceCacheLayers(0)) * int64(n) * c.KVLayerBytes(kernels.BF16)
	t.Logf("qwen3-tiny-bf16, %d × %d tokens: tensor-core attention cp.async %d bytes; %d launches, %d GEMMs, %d FLOPs; the trace's q %d bytes (f32: %d), KV cache %d bytes (f32: %d)",
		seqs, seqLen, cp, counts.Launches, counts.GEMMs, counts.FLOPs, int64(c.NumLayers)*q*2, int64(c.NumLayers)*q*4, cache, 2*cache)
}
