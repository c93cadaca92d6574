package cpu_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

func backends(b *testing.B) map[string]*cpu.Backend {
	bs := map[string]*cpu.Backend{"gonum": cpu.New(cpu.WithBLAS(cpu.BLASGonum))}
	if cpu.OpenBLASError() == nil {
		bs["openblas"] = cpu.New(cpu.WithBLAS(cpu.BLASOpenBLAS))
	}
	return bs
}

func filled(be kernels.Backend, n int) kernels.Buffer {
	buf := be.Alloc(kernels.F32, n)
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.Sin(float64(i))) // deterministic, well-scaled
	}
	be.Upload(buf, v)
	return buf
}

// BenchmarkMatMul reports GFLOP/s of C = A·Bᵀ (the shape of a linear layer:
// activations × weightᵀ) for both BLAS paths.
func BenchmarkMatMul(b *testing.B) {
	for _, name := range []string{"openblas", "gonum"} {
		be, ok := backends(b)[name]
		if !ok {
			continue
		}
		for _, s := range [][3]int{{512, 512, 512}, {512, 2048, 512}} {
			m, n, k := s[0], s[1], s[2]
			b.Run(fmt.Sprintf("%s/%dx%dx%d", name, m, n, k), func(b *testing.B) {
				a, w, c := filled(be, m*k), filled(be, n*k), filled(be, m*n)
				for b.Loop() {
					be.MatMul(c, a, w, m, n, k, false, true, 1, 0)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkAttentionPrefill512 is one Qwen3-0.6B layer's attention (16
// query heads, 8 KV heads, headDim 128) over a 512-token prefill. GFLOP/s
// counts the causal work only (QKᵀ and PV over positions 0..pos).
func BenchmarkAttentionPrefill512(b *testing.B) {
	const nTok, nHead, nKV, hd = 512, 16, 8, 128
	for _, name := range []string{"openblas", "gonum"} {
		be, ok := backends(b)[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			q, out := filled(be, nTok*nHead*hd), be.Alloc(kernels.F32, nTok*nHead*hd)
			k, v := filled(be, nTok*nKV*hd), filled(be, nTok*nKV*hd)
			slot, pos := be.Alloc(kernels.I32, nTok), be.Alloc(kernels.I32, nTok)
			ps := make([]int32, nTok)
			for i := range ps {
				ps[i] = int32(i)
			}
			be.UploadI32(pos, ps)
			pages := kernels.KVPages{Table: be.Alloc(kernels.I32, 1), BlockSize: nTok, MaxBlocks: 1}
			scale := float32(1 / math.Sqrt(hd))
			for b.Loop() {
				be.Attention(out, nil, q, k, v, slot, pos, pages, nTok, nHead, nKV, hd, scale, kernels.AttentionVariant{})
			}
			flops := 4.0 * nHead * hd * float64(nTok*(nTok+1)/2)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// swiGLUBenchN is the number of elements in the SwiGLU benchmarks: 4 MiB
// per operand (past L2, as a train micro-batch's 1024 tokens × 1536 are),
// the same n as scripts/bench_torch.py --swiglu.
const swiGLUBenchN = 1 << 20

// BenchmarkSwiGLU and BenchmarkSwiGLUBackward report ns per element on one
// goroutine for each kernel path (kernels=go is the plain-Go fallback),
// the figure scripts/bench_torch.py --swiglu gives for PyTorch on one
// thread. Gates are uniform in [−8, 8] so the exp sees both signs.
func BenchmarkSwiGLU(b *testing.B) {
	for _, k := range cpu.AvailableKernels() {
		b.Run("kernels="+string(k), func(b *testing.B) {
			be := cpu.New(cpu.WithKernels(k), cpu.WithWorkers(1))
			g, u, out := gates(be, swiGLUBenchN), filled(be, swiGLUBenchN), be.Alloc(kernels.F32, swiGLUBenchN)
			for b.Loop() {
				be.SwiGLU(out, g, u, swiGLUBenchN)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/swiGLUBenchN, "ns/elem")
		})
	}
}

func BenchmarkSwiGLUBackward(b *testing.B) {
	for _, k := range cpu.AvailableKernels() {
		b.Run("kernels="+string(k), func(b *testing.B) {
			be := cpu.New(cpu.WithKernels(k), cpu.WithWorkers(1))
			g, u, dy := gates(be, swiGLUBenchN), filled(be, swiGLUBenchN), filled(be, swiGLUBenchN)
			dg, du := be.Alloc(kernels.F32, swiGLUBenchN), be.Alloc(kernels.F32, swiGLUBenchN)
			for b.Loop() {
				be.SwiGLUBackward(dg, du, dy, g, u, swiGLUBenchN)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/swiGLUBenchN, "ns/elem")
		})
	}
}

// gates is n values spread over [−8, 8].
func gates(be kernels.Backend, n int) kernels.Buffer {
	buf := be.Alloc(kernels.F32, n)
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(8 * math.Sin(float64(i)*0.7))
	}
	be.Upload(buf, v)
	return buf
}

// BenchmarkElementwise reports ns per element (per logit for the
// log-softmax ops) of the other ops the C kernels cover, on one goroutine,
// for each kernel path: shapes of a qwen3-30m train micro-batch of 256
// tokens (hidden 512, vocab 8192) and an AdamW over 1M LoRA parameters.
func BenchmarkElementwise(b *testing.B) {
	const rows, dim, vocab, nParams = 256, 512, 8192, 1 << 20
	for _, k := range cpu.AvailableKernels() {
		be := cpu.New(cpu.WithKernels(k), cpu.WithWorkers(1))
		x, w, dy, out := filled(be, rows*dim), filled(be, dim), filled(be, rows*dim), be.Alloc(kernels.F32, rows*dim)
		rstd := be.Alloc(kernels.F32, rows)
		logits, lp, ent := gates(be, rows*vocab), be.Alloc(kernels.F32, rows), be.Alloc(kernels.F32, rows)
		dlogits, target := be.Alloc(kernels.F32, rows*vocab), be.Alloc(kernels.I32, rows)
		p, g, m, v := filled(be, nParams), filled(be, nParams), be.Alloc(kernels.F32, nParams), be.Alloc(kernels.F32, nParams)
		ap := kernels.AdamWParams{LR: 1e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 3}
		cases := []struct {
			name string
			n    int
			run  func()
		}{
			{"RMSNorm", rows * dim, func() { be.RMSNorm(out, rstd, x, w, rows, dim, 1e-6) }},
			{"RMSNormBackward", rows * dim, func() { be.RMSNormBackward(out, nil, dy, x, w, rstd, rows, dim, false) }},
			{"Add", rows * dim, func() { be.Add(out, x, dy, rows*dim) }},
			{"LogSoftmaxGather", rows * vocab, func() { be.LogSoftmaxGather(lp, ent, logits, target, rows, vocab) }},
			{"LogSoftmaxGatherBackward", rows * vocab, func() { be.LogSoftmaxGatherBackward(dlogits, lp, logits, target, rows, vocab) }},
			{"AdamW", nParams, func() { be.AdamW(p, g, m, v, nParams, ap) }},
		}
		be.RMSNorm(out, rstd, x, w, rows, dim, 1e-6) // rstd for the backward
		be.Fill(lp, 1, rows)                         // dlogp for the backward
		for _, c := range cases {
			b.Run(c.name+"/kernels="+string(k), func(b *testing.B) {
				for b.Loop() {
					c.run()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(c.n), "ns/elem")
			})
		}
	}
}

// BenchmarkAttentionDecodePaged is one qwen3-30m layer's decode attention
// (8 query heads, 4 KV heads, headDim 64) for 32 sequences at a 320-token
// context, over a contiguous cache and over a paged one of 16-token
// blocks interleaved across the sequences (as decode steps allocate them),
// so each sequence's keys are 20 separate runs.
func BenchmarkAttentionDecodePaged(b *testing.B) {
	const seqs, ctx, nHead, nKV, hd, bs = 32, 320, 8, 4, 64, 16
	be := cpu.New()
	q, out := filled(be, seqs*nHead*hd), be.Alloc(kernels.F32, seqs*nHead*hd)
	k, v := filled(be, seqs*ctx*nKV*hd), filled(be, seqs*ctx*nKV*hd)
	seq, pos := be.Alloc(kernels.I32, seqs), be.Alloc(kernels.I32, seqs)
	sv, pv := make([]int32, seqs), make([]int32, seqs)
	for i := range sv {
		sv[i], pv[i] = int32(i), ctx-1
	}
	be.UploadI32(seq, sv)
	be.UploadI32(pos, pv)
	contiguous := kernels.KVPages{Table: be.Alloc(kernels.I32, seqs), BlockSize: ctx, MaxBlocks: 1}
	be.UploadI32(contiguous.Table, kernels.IdentityTable(seqs))
	const per = ctx / bs
	paged := kernels.KVPages{Table: be.Alloc(kernels.I32, seqs*per), BlockSize: bs, MaxBlocks: per}
	tv := make([]int32, seqs*per)
	for s := range seqs {
		for j := range per {
			tv[s*per+j] = int32(j*seqs + s) // block j of every sequence, then block j+1
		}
	}
	be.UploadI32(paged.Table, tv)
	scale := float32(1 / math.Sqrt(hd))
	for _, c := range []struct {
		name  string
		pages kernels.KVPages
	}{{"contiguous", contiguous}, {"paged16", paged}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				be.Attention(out, nil, q, k, v, seq, pos, c.pages, seqs, nHead, nKV, hd, scale, kernels.AttentionVariant{})
			}
		})
	}
}
