package model

import (
	"math"
	"runtime"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// randomShape has an embedding of 2.1M values (three chunks, the last
// partial) and ~3.2M weights in all: enough for tight statistics.
func randomShape() *Config {
	return &Config{ModelType: "qwen3", HiddenSize: 256, IntermediateSize: 512, NumLayers: 2, NumHeads: 4,
		NumKVHeads: 2, HeadDim: 64, VocabSize: 8200, RMSNormEps: 1e-6, RopeTheta: 1e6, HiddenAct: "silu",
		TieWordEmbeddings: true}
}

// matrices downloads the model's matrices (embedding and projections) and
// its norms as f32.
func matrices(m *Model) (weights, norms [][]float32) {
	get := func(b kernels.Buffer) []float32 {
		v := make([]float32, b.Len())
		m.Backend.Download(v, b)
		return v
	}
	weights = append(weights, get(m.W.Embed))
	norms = append(norms, get(m.W.Norm))
	for _, l := range m.W.Layers {
		weights = append(weights, get(l.QKV), get(l.O), get(l.GateUp), get(l.Down))
		norms = append(norms, get(l.InputNorm), get(l.PostAttnNorm), get(l.QNorm), get(l.KNorm))
	}
	return weights, norms
}

// TestNewRandomParallel: the weights are the same on 1 and 4 cores; bf16
// weights are the f32 ones rounded to nearest-even; norms are 1; the
// values have mean 0 and std 0.02 within 5 standard errors; chunks of one
// tensor are different streams.
func TestNewRandomParallel(t *testing.T) {
	be := cpu.New()
	cfg := randomShape()
	build := func(procs int, dt kernels.DType) (w, n [][]float32) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		m := NewRandomParallel(cfg, be, 5, dt)
		defer m.Free()
		return matrices(m)
	}
	w1, norms := build(1, kernels.F32)
	w4, _ := build(4, kernels.F32)
	wb, _ := build(3, kernels.BF16)
	var sum, sumSq, count float64
	for i := range w1 {
		for j, v := range w1[i] {
			if w4[i][j] != v {
				t.Fatalf("matrix %d [%d]: %v on 1 core, %v on 4", i, j, v, w4[i][j])
			}
			if want := kerneltest.RoundBF16(v); wb[i][j] != want {
				t.Fatalf("matrix %d [%d]: bf16 %v, want %v rounded = %v", i, j, wb[i][j], v, want)
			}
			sum += float64(v)
			sumSq += float64(v) * float64(v)
			count++
		}
	}
	mean := sum / count
	std := math.Sqrt(sumSq/count - mean*mean)
	// Standard errors at n ≈ 3.2M: of the mean 0.02/√n ≈ 1.1e-5; of the
	// std 0.02·√((κ−1)/4n) ≈ 4.6e-6 (Irwin–Hall(4) kurtosis κ = 2.7).
	se := 0.02 / math.Sqrt(count)
	if math.Abs(mean) > 5*se {
		t.Errorf("mean %.3g over %.0f weights, want 0 within %.2g", mean, count, 5*se)
	}
	if math.Abs(std-0.02) > 5*0.02*math.Sqrt(1.7/(4*count)) {
		t.Errorf("std %.6g, want 0.02 within %.2g", std, 5*0.02*math.Sqrt(1.7/(4*count)))
	}
	for i, n := range norms {
		for j, v := range n {
			if v != 1 {
				t.Fatalf("norm %d [%d] = %v, want 1", i, j, v)
			}
		}
	}
	emb := w1[0]
	same := 0
	for j := range 1000 {
		if emb[j] == emb[randomChunk+j] {
			same++
		}
	}
	if same > 10 {
		t.Errorf("chunks 0 and 1 of the embedding agree in %d of 1000 values: one stream twice", same)
	}
}

// BenchmarkNewRandomParallel is the host cost of Qwen3-0.6B's random
// weights on the null device (drawing, rounding and staging; no device
// work), in ns per weight: NewRandomParallel in bf16 at GOMAXPROCS, and
// NewRandom's one f32 stream beside it.
//
//	go test ./model -run '^$' -bench NewRandom -benchtime 2x
func BenchmarkNewRandom(b *testing.B) {
	cfg, _ := Shape("qwen3-0.6b")
	for _, name := range []string{"parallel-bf16", "single-f32"} {
		b.Run(name, func(b *testing.B) {
			be := cuda.New(cuda.NewNullDevice())
			defer be.Close()
			for b.Loop() {
				if name == "single-f32" {
					NewRandom(cfg, be, 1).Free()
				} else {
					NewRandomParallel(cfg, be, 1, kernels.BF16).Free()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(cfg.ParamCount()), "ns/weight")
		})
	}
}

// TestNewRandomParallelKeepsF32Tensors: a bf16 random model keeps in f32
// the tensors a loaded checkpoint keeps in f32 (Mamba-2's A_log, dt_bias
// and D, DeltaNet's, the (1+w) norms), so the recurrent kernels that read
// them in f32 run: a bf16 Nemotron-H or Qwen3.5 forward used to stop on
// "aLog has dtype bf16".
func TestNewRandomParallelKeepsF32Tensors(t *testing.T) {
	be := cpu.New()
	for _, name := range []string{"nemotron_h-tiny", "qwen3_5-tiny"} {
		t.Run(name, func(t *testing.T) {
			cfg, err := LoadConfig("../testdata/models/" + name)
			if err != nil {
				t.Fatal(err)
			}
			m := NewRandomParallel(cfg, be, 3, kernels.BF16)
			defer m.Free()
			var kept, bf16 []kernels.Buffer
			for _, l := range m.W.Layers {
				if w := l.Mamba; w != nil {
					kept, bf16 = append(kept, w.ALog, w.DTBias, w.D), append(bf16, w.InProj)
				}
				if w := l.Linear; w != nil {
					kept, bf16 = append(kept, w.ALog, w.DTBias), append(bf16, w.QKV)
				}
			}
			if cfg.Arch().Name == "qwen3_5" { // (1+w) norms
				kept = append(kept, m.W.Norm)
			}
			if len(kept) == 0 || len(bf16) == 0 {
				t.Fatalf("%d f32-kept and %d bf16 tensors: the check saw nothing", len(kept), len(bf16))
			}
			for i, b := range kept {
				if b.DType() != kernels.F32 {
					t.Errorf("f32-kept tensor %d: %v", i, b.DType())
				}
			}
			for i, b := range bf16 {
				if b.DType() != kernels.BF16 {
					t.Errorf("projection %d: %v, want bf16", i, b.DType())
				}
			}
			c, err := m.NewPagedKVCache(2, 16, 4, 32)
			if err != nil {
				t.Fatal(err)
			}
			var b Batch
			b.Add(0, 0, 5, 9, 13, 2)
			logits, err := m.Forward(c, &b, []int32{3})
			if err != nil {
				t.Fatal(err)
			}
			v := make([]float32, logits.Len())
			be.Download(v, logits)
			be.Free(logits)
			for i, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("logit %d = %v", i, x)
				}
			}
		})
	}
}
