package cpu_test

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// The bf16 activations between ops (issue 33): mutants that get the one
// rounding wrong, each of which the suite's bf16 cases must catch. The
// norms' and SwiGLU's where only the bf16 copy is stored. They write through
// cpu.Float32s, which can leave values in a BF16 buffer that bf16 cannot
// hold — what a twin that forgot roundBF16 would do.

// storeUnrounded copies src (n values) into dst's storage as they are.
func storeUnrounded(dst, src kernels.Buffer, n int) {
	copy(cpu.Float32s(dst)[:n], cpu.Float32s(src)[:n])
}

// unroundedNormCast stores AddRMSNorm's bf16 copy unrounded when there is
// no f32 out (the path a bf16 model's step takes).
type unroundedNormCast struct{ *cpu.Backend }

func (m unroundedNormCast) AddRMSNorm(sum, out, outBF16, rstd, x, r, w kernels.Buffer, rows, dim int, eps float32) {
	if out != nil || outBF16 == nil {
		m.Backend.AddRMSNorm(sum, out, outBF16, rstd, x, r, w, rows, dim, eps)
		return
	}
	tmp := m.Alloc(kernels.F32, rows*dim)
	defer m.Free(tmp)
	m.Backend.AddRMSNorm(sum, tmp, nil, rstd, x, r, w, rows, dim, eps)
	storeUnrounded(outBF16, tmp, rows*dim)
}

// unroundedSwiGLUCast is unroundedNormCast for SwiGLURows.
type unroundedSwiGLUCast struct{ *cpu.Backend }

func (m unroundedSwiGLUCast) SwiGLURows(out, outBF16, gateUp kernels.Buffer, rows, width int) {
	if out != nil || outBF16 == nil {
		m.Backend.SwiGLURows(out, outBF16, gateUp, rows, width)
		return
	}
	tmp := m.Alloc(kernels.F32, rows*width)
	defer m.Free(tmp)
	m.Backend.SwiGLURows(tmp, nil, gateUp, rows, width)
	storeUnrounded(outBF16, tmp, rows*width)
}

// unroundedDGateUp stores a BF16 dGateUp unrounded.
type unroundedDGateUp struct{ *cpu.Backend }

func (m unroundedDGateUp) SwiGLURowsBackward(dGateUp, dy, gateUp kernels.Buffer, rows, width int) {
	if dGateUp.DType() != kernels.BF16 {
		m.Backend.SwiGLURowsBackward(dGateUp, dy, gateUp, rows, width)
		return
	}
	tmp := m.Alloc(kernels.F32, 2*rows*width)
	defer m.Free(tmp)
	m.Backend.SwiGLURowsBackward(tmp, dy, gateUp, rows, width)
	storeUnrounded(dGateUp, tmp, 2*rows*width)
}

// dxCastBeforeAccumulate rounds RMSNormBackward's own gradient into
// dxBF16, not the accumulated dx.
type dxCastBeforeAccumulate struct{ *cpu.Backend }

func (m dxCastBeforeAccumulate) RMSNormBackward(dx, dxBF16, dy, x, w, rstd kernels.Buffer, rows, dim int, accumulate bool) {
	if dxBF16 == nil || !accumulate {
		m.Backend.RMSNormBackward(dx, dxBF16, dy, x, w, rstd, rows, dim, accumulate)
		return
	}
	tmp := m.Alloc(kernels.F32, rows*dim)
	defer m.Free(tmp)
	m.Backend.RMSNormBackward(tmp, dxBF16, dy, x, w, rstd, rows, dim, false)
	m.Add(dx, dx, tmp, rows*dim)
}

// unroundedDxCast stores dxBF16 unrounded.
type unroundedDxCast struct{ *cpu.Backend }

func (m unroundedDxCast) RMSNormBackward(dx, dxBF16, dy, x, w, rstd kernels.Buffer, rows, dim int, accumulate bool) {
	m.Backend.RMSNormBackward(dx, nil, dy, x, w, rstd, rows, dim, accumulate)
	if dxBF16 != nil {
		storeUnrounded(dxBF16, dx, rows*dim)
	}
}

// Mistakes a kernel over bf16 activations makes: storing its f32 sum
// into a bf16 output unrounded (cpu storage is f32, so nothing else
// would round it), and computing in bf16 (an f32 operand rounded before
// the sum). The suite's bf16 Add and AddBias cases must catch each.

// storesBF16Unrounded adds in f32 and stores the sum as it is whatever
// out's dtype.
type storesBF16Unrounded struct{ *cpu.Backend }

func (m storesBF16Unrounded) Add(out, a, b kernels.Buffer, n int) {
	os, as, bs := cpu.Float32s(out)[:n], cpu.Float32s(a)[:n], cpu.Float32s(b)[:n]
	for i := range os {
		os[i] = as[i] + bs[i]
	}
}

func (m storesBF16Unrounded) AddBias(x, bias kernels.Buffer, rows, cols int) {
	xs, bs := cpu.Float32s(x)[:rows*cols], cpu.Float32s(bias)[:cols]
	for i := range xs {
		xs[i] += bs[i%cols]
	}
}

// sumsInBF16 rounds a to bf16 before the sum when any operand is BF16.
type sumsInBF16 struct{ *cpu.Backend }

func (m sumsInBF16) Add(out, a, b kernels.Buffer, n int) {
	if out.DType() == kernels.F32 && a.DType() == kernels.F32 && b.DType() == kernels.F32 {
		m.Backend.Add(out, a, b, n)
		return
	}
	ra := m.Alloc(kernels.BF16, n)
	defer m.Free(ra)
	m.Upload(ra, cpu.Float32s(a)[:n]) // rounds to nearest even
	m.Backend.Add(out, ra, b, n)
}

func TestSuiteCatchesBrokenBF16Activations(t *testing.T) {
	base := cpu.New()
	requireMutantsFail(t, base, []mutant{
		{"AddRMSNorm", "stores outBF16 unrounded without out", unroundedNormCast{base}, kerneltest.Check},
		{"SwiGLURows", "stores outBF16 unrounded without out", unroundedSwiGLUCast{base}, kerneltest.Check},
		{"SwiGLURowsBackward", "stores a bf16 dGateUp unrounded", unroundedDGateUp{base}, kerneltest.CheckTrain},
		{"RMSNormBackward", "rounds dx into dxBF16 before the accumulate", dxCastBeforeAccumulate{base}, kerneltest.CheckTrain},
		{"RMSNormBackward", "stores dxBF16 unrounded", unroundedDxCast{base}, kerneltest.CheckTrain},
		{"Add", "stores a bf16 sum unrounded", storesBF16Unrounded{base}, nil},
		{"AddBias", "stores a bf16 x unrounded", storesBF16Unrounded{base}, nil},
		{"Add", "rounds an f32 operand to bf16", sumsInBF16{base}, nil},
	})
}
