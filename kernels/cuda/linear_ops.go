package cuda

import (
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/kernels"
)

// The DeltaNet ops (kernels.LinearOps): causal_conv1d.cu, delta_gates.cu,
// gated_rmsnorm.cu and the gated delta rule's four kernels (decode step,
// chunked forward, chunked backward, l2 norms' backward). The runs
// stay on the device: the host never learns their lengths, so the one
// choice made here is by shape alone — when there are as many runs as
// tokens every run is one token (runs are disjoint and non-empty), a
// decode step, and gated_delta_step_f32 runs it with no scratch and no
// shared-memory opt-in; otherwise gated_delta_chunked_f32 does the runs
// in chunks of deltaChunk. An activation operand the ops' docs allow in
// BF16 picks a kernel's _as variant (the act mask: bf16Mask of the
// activations in the kernel's order); all-F32 calls run the f32 kernels.

const (
	// convMaxKernel is CONV_MAX_KERNEL in causal_conv1d.cu.
	convMaxKernel = 8
	// deltaChunk is DELTA_CHUNK in gated_delta_chunked.cu and
	// gated_delta_chunked_backward.cu.
	deltaChunk = 64
	// deltaBlock threads per (run, head) block of the chunked forward and
	// backward; deltaStepBlock those of the decode step and of the l2
	// backward.
	deltaBlock     = 256
	deltaStepBlock = 128
	// deltaMaxShared is what a block may opt into, less a margin for
	// static shared memory.
	deltaMaxShared = MaxSharedPerBlockOptIn - 1<<10
)

// slotsOf returns the state operand (nil: no slots) and its slot count.
func (b *Backend) slotsOf(op, name string, x kernels.Buffer, per int) (*buffer, int) {
	if x == nil {
		return &buffer{owner: b}, 0
	}
	bx := b.buf(op, name, x, 0, kernels.F32)
	return bx, bx.n / per
}

func convShape(op string, nRuns, nTok, channels, kernel int) int {
	i32(op, nRuns, nTok, channels, nTok*channels, channels*kernel, 4*nRuns)
	if channels <= 0 || kernel < 2 || kernel > convMaxKernel || nRuns > 65535 {
		panic(fmt.Sprintf("cuda: %s: channels %d, kernel %d (2..%d), nRuns %d (≤ 65535)", op, channels, kernel, convMaxKernel, nRuns))
	}
	return (kernel - 1) * channels
}

func (b *Backend) CausalConv1D(out, x, w, bias, convState, runs kernels.Buffer, nRuns, nTok, channels, kernel int) {
	const op = "CausalConv1D"
	per := convShape(op, nRuns, nTok, channels, kernel)
	o := b.buf(op, "out", out, nTok*channels, kernels.F32, kernels.BF16)
	xx := b.buf(op, "x", x, nTok*channels, kernels.F32, kernels.BF16)
	ww := b.buf(op, "w", w, channels*kernel, kernels.F32, kernels.BF16)
	bb := b.optBufOf(op, "bias", bias, channels, ww.dt)
	st, slots := b.slotsOf(op, "convState", convState, per)
	rr := b.buf(op, "runs", runs, 4*nRuns, kernels.I32)
	if nRuns == 0 || !usable(o, xx, ww, bb, st, rr) {
		return
	}
	name := "causal_conv1d_f32"
	if ww.dt == kernels.BF16 {
		name = "causal_conv1d_wbf16"
	}
	args := []any{o.ptr, xx.ptr, ww.ptr, bb.ptr, st.ptr, rr.ptr, int32(nTok), int32(slots), int32(channels), int32(kernel)}
	name, args = actKernel(name, args, o, xx)
	b.launch(name, D2((channels+255)/256, nRuns), D1(warpRound(channels, 256)), 0, args...)
}

// actKernel is a kernel and its arguments for activations acts: the f32
// kernel as it is when all are F32, else its _as variant with their
// bf16Mask appended.
func actKernel(name string, args []any, acts ...*buffer) (string, []any) {
	m := bf16Mask(acts...)
	if m == 0 {
		return name, args
	}
	return strings.TrimSuffix(name, "_f32") + "_as", append(args, m)
}

func (b *Backend) CausalConv1DBackward(dx, dConvState, dout, x, w, bias, convState, runs kernels.Buffer, nRuns, nTok, channels, kernel int) {
	const op = "CausalConv1DBackward"
	per := convShape(op, nRuns, nTok, channels, kernel)
	d := b.buf(op, "dx", dx, nTok*channels, kernels.F32, kernels.BF16)
	do := b.buf(op, "dout", dout, nTok*channels, kernels.F32, kernels.BF16)
	xx := b.buf(op, "x", x, nTok*channels, kernels.F32, kernels.BF16)
	ww := b.buf(op, "w", w, channels*kernel, kernels.F32, kernels.BF16)
	bb := b.optBufOf(op, "bias", bias, channels, ww.dt)
	st, slots := b.slotsOf(op, "convState", convState, per)
	dst := &buffer{owner: b}
	if slots > 0 {
		dst = b.buf(op, "dConvState", dConvState, slots*per, kernels.F32)
	}
	rr := b.buf(op, "runs", runs, 4*nRuns, kernels.I32)
	if nRuns == 0 || !usable(d, do, xx, ww, bb, st, dst, rr) {
		return
	}
	name := "causal_conv1d_backward_f32"
	if ww.dt == kernels.BF16 {
		name = "causal_conv1d_backward_wbf16"
	}
	args := []any{d.ptr, dst.ptr, do.ptr, xx.ptr, ww.ptr, bb.ptr, st.ptr, rr.ptr, int32(nTok), int32(slots), int32(channels), int32(kernel)}
	name, args = actKernel(name, args, d, do, xx)
	b.launch(name, D2((channels+255)/256, nRuns), D1(warpRound(channels, 256)), 0, args...)
}

// deltaOperands checks a GatedDeltaRule call's sizes and returns the
// width of a qkv row and the floats of one head's state.
func deltaOperands(op string, nRuns, nTok, nHeadK, nHeadV, dimK, dimV int) (width, hs int) {
	width, hs = 2*nHeadK*dimK+nHeadV*dimV, dimK*dimV
	i32(op, nRuns, nTok, nTok*width, nTok*nHeadV*dimV, 4*nRuns, nHeadV*hs)
	if nHeadK <= 0 || nHeadV <= 0 || nHeadV%nHeadK != 0 || dimK <= 0 || dimV <= 0 || nHeadV > 65535 {
		panic(fmt.Sprintf("cuda: %s: nHeadK %d, nHeadV %d (a multiple, ≤ 65535), dimK %d, dimV %d", op, nHeadK, nHeadV, dimK, dimV))
	}
	if s := max(chunkedShared(dimK, dimV), chunkedBackwardShared(dimK, dimV)); s > deltaMaxShared {
		panic(fmt.Sprintf("cuda: %s: dimK %d × dimV %d needs %d bytes of shared memory per block, more than %d", op, dimK, dimV, s, deltaMaxShared))
	}
	return width, hs
}

// chunkedShared and chunkedBackwardShared are the kernels' dynamic shared memory
// (their .cu files list what it holds).
func chunkedShared(dimK, dimV int) int {
	return 4 * (dimK*dimV + 2*deltaChunk*dimK + deltaChunk*dimV + deltaChunk*deltaChunk + 2*deltaChunk)
}
func chunkedBackwardShared(dimK, dimV int) int {
	return 4 * (2*deltaChunk*dimK + 3*deltaChunk*dimV + 3*deltaChunk*deltaChunk + 4*deltaChunk)
}

func (b *Backend) GatedDeltaRule(out, qkv, g, beta, state, runs kernels.Buffer, nRuns, nTok, nHeadK, nHeadV, dimK, dimV int) {
	const op = "GatedDeltaRule"
	width, hs := deltaOperands(op, nRuns, nTok, nHeadK, nHeadV, dimK, dimV)
	o := b.buf(op, "out", out, nTok*nHeadV*dimV, kernels.F32, kernels.BF16)
	q := b.buf(op, "qkv", qkv, nTok*width, kernels.F32, kernels.BF16)
	gg := b.buf(op, "g", g, nTok*nHeadV, kernels.F32)
	bb := b.buf(op, "beta", beta, nTok*nHeadV, kernels.F32)
	st, slots := b.slotsOf(op, "state", state, nHeadV*hs)
	rr := b.buf(op, "runs", runs, 4*nRuns, kernels.I32)
	if nRuns == 0 || !usable(o, q, gg, bb, st, rr) {
		return
	}
	args := []any{o.ptr, q.ptr, gg.ptr, bb.ptr, st.ptr, rr.ptr, int32(nTok), int32(slots), int32(nHeadK), int32(nHeadV), int32(dimK), int32(dimV)}
	if nRuns == nTok {
		name, args := actKernel("gated_delta_step_f32", args, o, q)
		b.launch(name, D2(nRuns, nHeadV), D1(deltaStepBlock), 4*2*dimK, args...)
		return
	}
	name, args := actKernel("gated_delta_chunked_f32", args, o, q)
	b.launch(name, D2(nRuns, nHeadV), D1(deltaBlock), chunkedShared(dimK, dimV), args...)
}

// GatedDeltaRuleBackward takes scratch from the pool for the chunk start
// states ((⌊nTok/deltaChunk⌋ + nRuns) × nHeadV states bound Σ over runs
// of ⌈count/deltaChunk⌉), for each block's running state gradient
// (nRuns × nHeadV states) and for the per-value-head dq̂ and dk̂, which
// are zeroed first so tokens no run covers read zeros.
func (b *Backend) GatedDeltaRuleBackward(dqkv, dg, dbeta, dState, dout, qkv, g, beta, state, runs kernels.Buffer, nRuns, nTok, nHeadK, nHeadV, dimK, dimV int) {
	const op = "GatedDeltaRuleBackward"
	width, hs := deltaOperands(op, nRuns, nTok, nHeadK, nHeadV, dimK, dimV)
	dq := b.buf(op, "dqkv", dqkv, nTok*width, kernels.F32, kernels.BF16)
	dgg := b.buf(op, "dg", dg, nTok*nHeadV, kernels.F32)
	dbb := b.buf(op, "dbeta", dbeta, nTok*nHeadV, kernels.F32)
	do := b.buf(op, "dout", dout, nTok*nHeadV*dimV, kernels.F32, kernels.BF16)
	q := b.buf(op, "qkv", qkv, nTok*width, kernels.F32, kernels.BF16)
	gg := b.buf(op, "g", g, nTok*nHeadV, kernels.F32)
	bb := b.buf(op, "beta", beta, nTok*nHeadV, kernels.F32)
	st, slots := b.slotsOf(op, "state", state, nHeadV*hs)
	dst := &buffer{owner: b}
	if slots > 0 {
		dst = b.buf(op, "dState", dState, slots*nHeadV*hs, kernels.F32)
	}
	rr := b.buf(op, "runs", runs, 4*nRuns, kernels.I32)
	if nRuns == 0 || !usable(dq, dgg, dbb, do, q, gg, bb, st, dst, rr) {
		return
	}
	heads := 2 * nTok * nHeadV * dimK
	states := (nTok/deltaChunk + 2*nRuns) * nHeadV * hs // chunk starts, then one dS per block
	i32(op, heads, states)
	dqk, ok := b.scratch(4 * heads)
	if !ok {
		return
	}
	defer b.putScratch(dqk, 4*heads)
	ck, ok := b.scratch(4 * states)
	if !ok {
		return
	}
	defer b.putScratch(ck, 4*states)
	dkh := dqk + DevicePtr(4*nTok*nHeadV*dimK)
	work := ck + DevicePtr(4*(nTok/deltaChunk+nRuns)*nHeadV*hs)
	b.elementwise("fill_f32", heads, dqk, float32(0), int32(heads))
	// One mask numbering for both kernels (the l2 kernel reads no dout).
	name, args := actKernel("gated_delta_chunked_backward_f32", []any{dq.ptr, dgg.ptr, dbb.ptr, dst.ptr, dqk, dkh, ck, work, do.ptr, q.ptr, gg.ptr, bb.ptr, st.ptr, rr.ptr,
		int32(nTok), int32(slots), int32(nHeadK), int32(nHeadV), int32(dimK), int32(dimV)}, dq, do, q)
	b.launch(name, D2(nRuns, nHeadV), D1(deltaBlock), chunkedBackwardShared(dimK, dimV), args...)
	name, args = actKernel("gated_delta_l2_backward_f32", []any{dq.ptr, dqk, dkh, q.ptr, int32(nHeadK), int32(nHeadV), int32(dimK), int32(dimV)}, dq, do, q)
	b.launch(name, D2(nTok, nHeadK), D1(deltaStepBlock), 0, args...)
}

// weightKernel picks a kernel's f32 or bf16-weight variant; the weights
// of one op share a dtype.
func weightKernel(op, f32Name, bf16Name string, ws ...*buffer) string {
	for _, w := range ws[1:] {
		if w.dt != ws[0].dt {
			panic(fmt.Sprintf("cuda: %s: weights of dtypes %v and %v; want one", op, ws[0].dt, w.dt))
		}
	}
	if ws[0].dt == kernels.BF16 {
		return bf16Name
	}
	return f32Name
}

func (b *Backend) DeltaGates(g, beta, a, bv, aLog, dtBias kernels.Buffer, rows, heads int) {
	const op = "DeltaGates"
	positive(op, rows, heads)
	i32(op, rows*heads)
	n := rows * heads
	gg, be := b.buf(op, "g", g, n, kernels.F32), b.buf(op, "beta", beta, n, kernels.F32)
	aa, bb := b.buf(op, "a", a, n, kernels.F32), b.buf(op, "b", bv, n, kernels.F32)
	al, dt := b.buf(op, "aLog", aLog, heads, kernels.F32, kernels.BF16), b.buf(op, "dtBias", dtBias, heads, kernels.F32, kernels.BF16)
	if !usable(gg, be, aa, bb, al, dt) {
		return
	}
	b.elementwise(weightKernel(op, "delta_gates_f32", "delta_gates_wbf16", al, dt), n, gg.ptr, be.ptr, aa.ptr, bb.ptr, al.ptr, dt.ptr, int32(n), int32(heads))
}

func (b *Backend) DeltaGatesBackward(da, db, dg, dbeta, a, bv, aLog, dtBias kernels.Buffer, rows, heads int) {
	const op = "DeltaGatesBackward"
	positive(op, rows, heads)
	i32(op, rows*heads)
	n := rows * heads
	dA, dB := b.buf(op, "da", da, n, kernels.F32), b.buf(op, "db", db, n, kernels.F32)
	dG, dBe := b.buf(op, "dg", dg, n, kernels.F32), b.buf(op, "dbeta", dbeta, n, kernels.F32)
	aa, bb := b.buf(op, "a", a, n, kernels.F32), b.buf(op, "b", bv, n, kernels.F32)
	al, dt := b.buf(op, "aLog", aLog, heads, kernels.F32, kernels.BF16), b.buf(op, "dtBias", dtBias, heads, kernels.F32, kernels.BF16)
	if !usable(dA, dB, dG, dBe, aa, bb, al, dt) {
		return
	}
	b.elementwise(weightKernel(op, "delta_gates_backward_f32", "delta_gates_backward_wbf16", al, dt), n, dA.ptr, dB.ptr, dG.ptr, dBe.ptr, aa.ptr, bb.ptr, al.ptr, dt.ptr, int32(n), int32(heads))
}

func (b *Backend) GatedRMSNorm(out, rstd, x, z, w kernels.Buffer, rows, dim int, eps float32) {
	const op = "GatedRMSNorm"
	positive(op, rows, dim)
	i32(op, rows*dim)
	o := b.buf(op, "out", out, rows*dim, kernels.F32, kernels.BF16)
	r := b.optBuf(op, "rstd", rstd, rows)
	xx, zz := b.buf(op, "x", x, rows*dim, kernels.F32, kernels.BF16), b.buf(op, "z", z, rows*dim, kernels.F32, kernels.BF16)
	ww := b.buf(op, "w", w, dim, kernels.F32, kernels.BF16)
	if !usable(o, r, xx, zz, ww) {
		return
	}
	name, args := actKernel(weightKernel(op, "gated_rmsnorm_f32", "gated_rmsnorm_wbf16", ww), []any{o.ptr, r.ptr, xx.ptr, zz.ptr, ww.ptr, int32(dim), eps}, o, xx, zz)
	b.launch(name, D1(rows), D1(warpRound(dim, rowBlock)), 0, args...)
}

func (b *Backend) GatedRMSNormBackward(dx, dz, dy, x, z, w, rstd kernels.Buffer, rows, dim int) {
	const op = "GatedRMSNormBackward"
	positive(op, rows, dim)
	i32(op, rows*dim)
	dX, dZ := b.buf(op, "dx", dx, rows*dim, kernels.F32, kernels.BF16), b.buf(op, "dz", dz, rows*dim, kernels.F32, kernels.BF16)
	dY := b.buf(op, "dy", dy, rows*dim, kernels.F32, kernels.BF16)
	xx, zz := b.buf(op, "x", x, rows*dim, kernels.F32, kernels.BF16), b.buf(op, "z", z, rows*dim, kernels.F32, kernels.BF16)
	ww := b.buf(op, "w", w, dim, kernels.F32, kernels.BF16)
	r := b.buf(op, "rstd", rstd, rows, kernels.F32)
	if !usable(dX, dZ, dY, xx, zz, ww, r) {
		return
	}
	name, args := actKernel(weightKernel(op, "gated_rmsnorm_backward_f32", "gated_rmsnorm_backward_wbf16", ww),
		[]any{dX.ptr, dZ.ptr, dY.ptr, xx.ptr, zz.ptr, ww.ptr, r.ptr, int32(dim)}, dX, dZ, dY, xx, zz)
	b.launch(name, D1(rows), D1(warpRound(dim, rowBlock)), 0, args...)
}
