package cpu_test

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// The DeltaNet ops over bf16 activations: mutants that store a BF16
// output unrounded (all of it, or the part one of the GPU's two kernels
// writes), each of which the suite's bf16 LinearOps cases must catch.

// unroundedLinear runs each op into f32 scratch and copies a BF16
// output's values in unrounded.
type unroundedLinear struct{ *cpu.Backend }

// viaF32 returns an F32 scratch for a BF16 output x of n values (x itself
// when F32) and the copy that stores it back unrounded.
func (m unroundedLinear) viaF32(x kernels.Buffer, n int) (kernels.Buffer, func()) {
	if x.DType() != kernels.BF16 {
		return x, func() {}
	}
	tmp := m.Alloc(kernels.F32, n)
	return tmp, func() { storeUnrounded(x, tmp, n); m.Free(tmp) }
}

func (m unroundedLinear) CausalConv1D(out, x, w, bias, convState, runs kernels.Buffer, nRuns, nTok, channels, kernel int) {
	o, store := m.viaF32(out, nTok*channels)
	m.Backend.CausalConv1D(o, x, w, bias, convState, runs, nRuns, nTok, channels, kernel)
	store()
}

func (m unroundedLinear) CausalConv1DBackward(dx, dConvState, dout, x, w, bias, convState, runs kernels.Buffer, nRuns, nTok, channels, kernel int) {
	d, store := m.viaF32(dx, nTok*channels)
	m.Backend.CausalConv1DBackward(d, dConvState, dout, x, w, bias, convState, runs, nRuns, nTok, channels, kernel)
	store()
}

func (m unroundedLinear) GatedDeltaRule(out, qkv, g, beta, state, runs kernels.Buffer, nRuns, nTok, nHeadK, nHeadV, dimK, dimV int) {
	o, store := m.viaF32(out, nTok*nHeadV*dimV)
	m.Backend.GatedDeltaRule(o, qkv, g, beta, state, runs, nRuns, nTok, nHeadK, nHeadV, dimK, dimV)
	store()
}

func (m unroundedLinear) GatedDeltaRuleBackward(dqkv, dg, dbeta, dState, dout, qkv, g, beta, state, runs kernels.Buffer, nRuns, nTok, nHeadK, nHeadV, dimK, dimV int) {
	d, store := m.viaF32(dqkv, nTok*(2*nHeadK*dimK+nHeadV*dimV))
	m.Backend.GatedDeltaRuleBackward(d, dg, dbeta, dState, dout, qkv, g, beta, state, runs, nRuns, nTok, nHeadK, nHeadV, dimK, dimV)
	store()
}

func (m unroundedLinear) GatedRMSNorm(out, rstd, x, z, w kernels.Buffer, rows, dim int, eps float32) {
	o, store := m.viaF32(out, rows*dim)
	m.Backend.GatedRMSNorm(o, rstd, x, z, w, rows, dim, eps)
	store()
}

func (m unroundedLinear) GatedRMSNormBackward(dx, dz, dy, x, z, w, rstd kernels.Buffer, rows, dim int) {
	d, storeX := m.viaF32(dx, rows*dim)
	e, storeZ := m.viaF32(dz, rows*dim)
	m.Backend.GatedRMSNormBackward(d, e, dy, x, z, w, rstd, rows, dim)
	storeX()
	storeZ()
}

// unroundedQK stores a BF16 dqkv's q and k columns unrounded and rounds
// its v columns: the GPU's l2-norm kernel forgetting the rounding the
// chunked kernel does.
type unroundedQK struct{ *cpu.Backend }

func (m unroundedQK) GatedDeltaRuleBackward(dqkv, dg, dbeta, dState, dout, qkv, g, beta, state, runs kernels.Buffer, nRuns, nTok, nHeadK, nHeadV, dimK, dimV int) {
	if dqkv.DType() != kernels.BF16 {
		m.Backend.GatedDeltaRuleBackward(dqkv, dg, dbeta, dState, dout, qkv, g, beta, state, runs, nRuns, nTok, nHeadK, nHeadV, dimK, dimV)
		return
	}
	width, qk := 2*nHeadK*dimK+nHeadV*dimV, 2*nHeadK*dimK
	tmp := m.Alloc(kernels.F32, nTok*width)
	defer m.Free(tmp)
	m.Backend.GatedDeltaRuleBackward(tmp, dg, dbeta, dState, dout, qkv, g, beta, state, runs, nRuns, nTok, nHeadK, nHeadV, dimK, dimV)
	dst, src := cpu.Float32s(dqkv), cpu.Float32s(tmp)
	for i := range nTok * width {
		dst[i] = src[i]
		if i%width >= qk {
			dst[i] = kerneltest.RoundBF16(src[i])
		}
	}
}

// unroundedDz stores GatedRMSNormBackward's BF16 dz unrounded (dx rounded).
type unroundedDz struct{ *cpu.Backend }

func (m unroundedDz) GatedRMSNormBackward(dx, dz, dy, x, z, w, rstd kernels.Buffer, rows, dim int) {
	e, store := unroundedLinear(m).viaF32(dz, rows*dim)
	m.Backend.GatedRMSNormBackward(dx, e, dy, x, z, w, rstd, rows, dim)
	store()
}

func TestSuiteCatchesBrokenLinearBF16(t *testing.T) {
	base := cpu.New()
	requireMutantsFail(t, base, []mutant{
		{"CausalConv1D", "stores a bf16 out unrounded", unroundedLinear{base}, nil},
		{"CausalConv1DBackward", "stores a bf16 dx unrounded", unroundedLinear{base}, nil},
		{"GatedDeltaRule", "stores a bf16 out unrounded", unroundedLinear{base}, nil},
		{"GatedDeltaRuleBackward", "stores a bf16 dqkv unrounded", unroundedLinear{base}, nil},
		{"GatedDeltaRuleBackward", "stores a bf16 dqkv's q and k columns unrounded", unroundedQK{base}, nil},
		{"GatedRMSNorm", "stores a bf16 out unrounded", unroundedLinear{base}, nil},
		{"GatedRMSNormBackward", "stores bf16 dx and dz unrounded", unroundedLinear{base}, nil},
		{"GatedRMSNormBackward", "stores a bf16 dz unrounded", unroundedDz{base}, nil},
	})
}
