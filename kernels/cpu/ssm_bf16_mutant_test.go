package cpu_test

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// The Mamba-2 ops over bf16 activations: mutants that get the one
// rounding wrong — a BF16 output stored unrounded (each op computes into
// an f32 scratch, copied over as it is), or an f32 output rounded because
// an input is BF16 — each of which the suite's bf16 cases must catch.

// f32Twin is an F32 scratch of n elements for a BF16 out (out itself
// otherwise), and a func that stores it back unrounded and frees it.
func f32Twin(b *cpu.Backend, out kernels.Buffer, n int) (kernels.Buffer, func()) {
	if out.DType() != kernels.BF16 {
		return out, func() {}
	}
	tmp := b.Alloc(kernels.F32, n)
	copy(cpu.Float32s(tmp), cpu.Float32s(out)[:n]) // out may alias an input
	return tmp, func() { storeUnrounded(out, tmp, n); b.Free(tmp) }
}

// unroundedSSM stores each op's BF16 outputs unrounded.
type unroundedSSM struct{ *cpu.Backend }

func (m unroundedSSM) SSDScan(y, xBC, dtRaw, aLog, dtBias, d, state, runs kernels.Buffer, nRuns, nTok, nHeads, headDim, nGroups, stateSize int) {
	ty, done := f32Twin(m.Backend, y, nTok*nHeads*headDim)
	m.Backend.SSDScan(ty, xBC, dtRaw, aLog, dtBias, d, state, runs, nRuns, nTok, nHeads, headDim, nGroups, stateSize)
	done()
}

func (m unroundedSSM) SSDScanBackward(dxBC, ddtRaw, dState, dy, xBC, dtRaw, aLog, dtBias, d, state, runs kernels.Buffer, nRuns, nTok, nHeads, headDim, nGroups, stateSize int) {
	tx, done := f32Twin(m.Backend, dxBC, nTok*(nHeads*headDim+2*nGroups*stateSize))
	m.Backend.SSDScanBackward(tx, ddtRaw, dState, dy, xBC, dtRaw, aLog, dtBias, d, state, runs, nRuns, nTok, nHeads, headDim, nGroups, stateSize)
	done()
}

func (m unroundedSSM) GroupedGatedRMSNorm(out, rstd, x, z, w kernels.Buffer, rows, dim, groups int, eps float32) {
	to, done := f32Twin(m.Backend, out, rows*dim)
	if out == x && to != out {
		x = to // out aliases x: the scratch holds x's values
	}
	m.Backend.GroupedGatedRMSNorm(to, rstd, x, z, w, rows, dim, groups, eps)
	done()
}

func (m unroundedSSM) GroupedGatedRMSNormBackward(dx, dz, dy, x, z, w, rstd kernels.Buffer, rows, dim, groups int) {
	tz, done := f32Twin(m.Backend, dz, rows*dim)
	m.Backend.GroupedGatedRMSNormBackward(dx, tz, dy, x, z, w, rstd, rows, dim, groups)
	done()
}

// roundsF32Y rounds an F32 y to bf16 values when xBC is BF16.
type roundsF32Y struct{ *cpu.Backend }

func (m roundsF32Y) SSDScan(y, xBC, dtRaw, aLog, dtBias, d, state, runs kernels.Buffer, nRuns, nTok, nHeads, headDim, nGroups, stateSize int) {
	m.Backend.SSDScan(y, xBC, dtRaw, aLog, dtBias, d, state, runs, nRuns, nTok, nHeads, headDim, nGroups, stateSize)
	if xBC.DType() == kernels.BF16 && y.DType() == kernels.F32 {
		ys := cpu.Float32s(y)[:nTok*nHeads*headDim]
		for i, v := range ys {
			ys[i] = kerneltest.RoundBF16(v)
		}
	}
}

func TestSuiteCatchesBrokenSSMBF16Activations(t *testing.T) {
	base := cpu.New()
	requireMutantsFail(t, base, []mutant{
		{"SSDScan", "stores a bf16 y unrounded", unroundedSSM{base}, nil},
		{"SSDScanBackward", "stores a bf16 dxBC unrounded", unroundedSSM{base}, nil},
		{"GroupedGatedRMSNorm", "stores a bf16 out unrounded", unroundedSSM{base}, nil},
		{"GroupedGatedRMSNormBackward", "stores a bf16 dz unrounded", unroundedSSM{base}, nil},
		{"SSDScan", "rounds an f32 y beside a bf16 xBC", roundsF32Y{base}, nil},
	})
}
