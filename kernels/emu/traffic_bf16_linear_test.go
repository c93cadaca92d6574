package emu

import (
	"maps"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
)

// TestTrafficCountsDeltaNetBF16 holds cuda.Traffic, for a DeltaNet
// layer's ops over bf16 activations, to the operands' dtypes worked out
// by hand: a BF16 x, out, qkv, z, dout, dy, dqkv or dx counts 2 bytes an
// element, the F32 states (whole operands), gates, rstd and their
// gradients (and an F32 dx or dz beside bf16 inputs) 4, the runs 4, the
// tagged weights nothing.
func TestTrafficCountsDeltaNetBF16(t *testing.T) {
	b := New()
	defer b.Close()
	const nTok, ch, kernel, slots = 10, 8, 4, 2
	const nHK, nHV, dK, dV = 1, 2, 8, 4
	const width, rows = 2*nHK*dK + nHV*dV, nTok * nHV
	const convSt, st = slots * (kernel - 1) * ch, slots * nHV * dK * dV
	alloc := func(dt kernels.DType, n int) kernels.Buffer {
		x := b.Alloc(dt, n)
		b.Upload(x, make([]float32, n))
		return x
	}
	bf, f := kernels.BF16, kernels.F32
	runs := b.Alloc(kernels.I32, 8)
	b.UploadI32(runs, []int32{0, 6, -1, 0, 6, 4, -1, 1})
	x, convOut, dConvOut, dxF32 := alloc(bf, nTok*ch), alloc(bf, nTok*ch), alloc(bf, nTok*ch), alloc(f, nTok*ch)
	w, cs, dcs := alloc(bf, ch*kernel), alloc(f, convSt), alloc(f, convSt)
	qkv, out, dout, dqkv := alloc(bf, nTok*width), alloc(bf, rows*dV), alloc(bf, rows*dV), alloc(bf, nTok*width)
	g, beta, dg, dbeta, state, dState := alloc(f, rows), alloc(f, rows), alloc(f, rows), alloc(f, rows), alloc(f, st), alloc(f, st)
	z, normed, rstd, dy, dx, dzF32 := alloc(bf, rows*dV), alloc(bf, rows*dV), alloc(f, rows), alloc(bf, rows*dV), alloc(bf, rows*dV), alloc(f, rows*dV)
	nw := alloc(bf, dV)
	b.TagWeights(w, nw)
	tr := b.CountTraffic()
	b.CausalConv1D(convOut, x, w, nil, cs, runs, 2, nTok, ch, kernel)
	b.CausalConv1DBackward(dxF32, dcs, dConvOut, x, w, nil, cs, runs, 2, nTok, ch, kernel)
	b.GatedDeltaRule(out, qkv, g, beta, state, runs, 2, nTok, nHK, nHV, dK, dV)
	b.GatedDeltaRuleBackward(dqkv, dg, dbeta, dState, dout, qkv, g, beta, state, runs, 2, nTok, nHK, nHV, dK, dV)
	b.GatedRMSNorm(normed, rstd, out, z, nw, rows, dV, 1e-6)
	b.GatedRMSNormBackward(dx, dzF32, dy, out, z, nw, rstd, rows, dV)
	b.StopTraffic()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	const c, q, o = 2 * nTok * ch, 2 * nTok * width, 2 * rows * dV // bf16 bytes of x, qkv, out
	want := cuda.Traffic{
		"CausalConv1D/out": c, "CausalConv1D/x": c, "CausalConv1D/convState": 4 * convSt, "CausalConv1D/runs": 32,
		"CausalConv1DBackward/dx": 2 * c, "CausalConv1DBackward/dout": c, "CausalConv1DBackward/x": c,
		"CausalConv1DBackward/convState": 4 * convSt, "CausalConv1DBackward/dConvState": 4 * convSt, "CausalConv1DBackward/runs": 32,
		"GatedDeltaRule/out": o, "GatedDeltaRule/qkv": q, "GatedDeltaRule/g": 4 * rows, "GatedDeltaRule/beta": 4 * rows,
		"GatedDeltaRule/state": 4 * st, "GatedDeltaRule/runs": 32,
		"GatedDeltaRuleBackward/dqkv": q, "GatedDeltaRuleBackward/dg": 4 * rows, "GatedDeltaRuleBackward/dbeta": 4 * rows,
		"GatedDeltaRuleBackward/dout": o, "GatedDeltaRuleBackward/qkv": q, "GatedDeltaRuleBackward/g": 4 * rows,
		"GatedDeltaRuleBackward/beta": 4 * rows, "GatedDeltaRuleBackward/state": 4 * st, "GatedDeltaRuleBackward/dState": 4 * st,
		"GatedDeltaRuleBackward/runs": 32,
		"GatedRMSNorm/out":            o, "GatedRMSNorm/rstd": 4 * rows, "GatedRMSNorm/x": o, "GatedRMSNorm/z": o,
		"GatedRMSNormBackward/dx": o, "GatedRMSNormBackward/dz": 2 * o, "GatedRMSNormBackward/dy": o, "GatedRMSNormBackward/x": o,
		"GatedRMSNormBackward/z": o, "GatedRMSNormBackward/rstd": 4 * rows,
	}
	if !maps.Equal(tr, want) {
		for k, v := range tr {
			if want[k] != v {
				t.Errorf("%s: %d bytes, want %d", k, v, want[k])
			}
		}
		for k, v := range want {
			if _, ok := tr[k]; !ok {
				t.Errorf("%s: not counted, want %d", k, v)
			}
		}
	}
}
