package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The Mamba-2 ops (kernels.SSMOps): the scan's recurrent kernels
// (ssd_scan.cu: the forward one block per (state row, head, run), the
// backward one per (head, run) walking the head's rows in turn, one thread
// per state element; the forward is also the decode step — no scratch,
// nothing the host waits for), its chunked ones (ssd_chunked.cu,
// ssd_chunked_backward.cu: one block per (run, head) walking chunks of
// ssdChunk tokens with matrix products), the backward's fixed-order sums
// (ssd_backward_sums.cu), and grouped_gated_rmsnorm.cu's, one block per
// (row, group).
//
// The runs stay on the device, so the scan's path is chosen by shape: the
// chunked kernels when the runs average at least ssdChunkedMinRun tokens
// and their shared memory fits, the recurrent ones otherwise — decode
// steps (a token per run) among them.
//
// xBC, y, dy and dxBC may be BF16 (a bf16 model's activations between
// ops): each kernel then runs as its _as twin, whose act flag word
// (ssd.cuh's SSD_ACT_*: dxBC or y 1, dy 2, xBC 4) says which to read
// widened and store rounded once; the f32 kernels are those twins with
// the word 0. The norms' _as kernels take x, z, out (dy, x, z, dx, dz)
// the same way, bit i for operand i in that order.

const (
	// ssdMaxState bounds stateSize: a recurrent block holds one state
	// row, a thread per element (Nemotron-3's rows are 128).
	ssdMaxState = 256
	// ssdReplay is SSD_REPLAY in ssd_scan.cu.
	ssdReplay = 16
	// ssdChunk is SSD_CHUNK in ssd.cuh; ssdBlock threads per (run, head)
	// block of the chunked kernels.
	ssdChunk = 64
	ssdBlock = 256
	// ssdSumBlock threads per block of ssd_backward_sums.cu's kernels.
	ssdSumBlock = 256
	// ssdChunkedMinRun is the mean run length from which SSDScan and its
	// backward take the chunked kernels. The recurrent kernels have
	// headDim times the blocks and no chunk to fill, and reread B and C
	// per state row and token (BENCHMARKS.md counts both): below a
	// quarter chunk the chunked kernels' shared memory sits mostly empty.
	// Not tuned on a GPU.
	ssdChunkedMinRun = 16
)

// SSDPath picks the scan's kernels. Both agree within the conformance
// tolerances on every input, so the choice is speed only.
type SSDPath int

const (
	// SSDAuto chooses by shape (above).
	SSDAuto SSDPath = iota
	// SSDRecurrent always runs ssd_scan.cu's kernels.
	SSDRecurrent
	// SSDChunked runs the chunked kernels wherever their shared memory
	// fits (the recurrent ones otherwise).
	SSDChunked
)

// SetSSDPath makes SSDScan and SSDScanBackward run path (for tests and
// benchmarks).
func (b *Backend) SetSSDPath(p SSDPath) { b.ssdPath = p }

// ssdChunkedShared and ssdChunkedBackwardShared are the chunked kernels'
// dynamic shared memory (their .cu files list what it holds).
func ssdChunkedShared(headDim, stateSize int) int {
	return 4 * (stateSize*(headDim+1) + 2*ssdChunk*(stateSize+1) + ssdChunk*headDim + ssdChunk*ssdChunk + 6*ssdChunk)
}
func ssdChunkedBackwardShared(headDim, stateSize int) int {
	return 4 * (stateSize*(headDim+1) + 2*ssdChunk*(stateSize+1) + 2*ssdChunk*headDim + 3*ssdChunk*ssdChunk + 9*ssdChunk)
}

// ssdChunked reports whether a scan call takes the chunked kernels.
func (b *Backend) ssdChunked(nRuns, nTok, headDim, stateSize int) bool {
	switch b.ssdPath {
	case SSDRecurrent:
		return false
	case SSDChunked:
		return ssdChunkedFits(headDim, stateSize)
	}
	return ssdAutoChunked(nRuns, nTok, headDim, stateSize)
}

// ssdChunkedFits reports whether the chunked kernels' shared memory fits.
func ssdChunkedFits(headDim, stateSize int) bool {
	return max(ssdChunkedShared(headDim, stateSize), ssdChunkedBackwardShared(headDim, stateSize)) <= deltaMaxShared
}

// ssdAutoChunked is SSDAuto's choice: the chunked kernels where they fit
// and the runs average ssdChunkedMinRun tokens or more.
func ssdAutoChunked(nRuns, nTok, headDim, stateSize int) bool {
	return ssdChunkedFits(headDim, stateSize) && nTok >= ssdChunkedMinRun*nRuns
}

func ssmOperands(op string, nRuns, nTok, nHeads, headDim, nGroups, stateSize int) (width, perSlot int) {
	width, perSlot = nHeads*headDim+2*nGroups*stateSize, nHeads*headDim*stateSize
	i32(op, nRuns, nTok, nTok*width, nTok*nHeads*headDim, 4*nRuns, perSlot, nHeads*headDim)
	if nHeads <= 0 || headDim <= 0 || nGroups <= 0 || nHeads%nGroups != 0 || stateSize <= 0 || stateSize > ssdMaxState || nRuns > 65535 {
		panic(fmt.Sprintf("cuda: %s: nHeads %d (a multiple of nGroups %d), headDim %d, stateSize %d (≤ %d), nRuns %d (≤ 65535)",
			op, nHeads, nGroups, headDim, stateSize, ssdMaxState, nRuns))
	}
	return width, perSlot
}

func (b *Backend) SSDScan(y, xBC, dtRaw, aLog, dtBias, d, state, runs kernels.Buffer, nRuns, nTok, nHeads, headDim, nGroups, stateSize int) {
	const op = "SSDScan"
	width, per := ssmOperands(op, nRuns, nTok, nHeads, headDim, nGroups, stateSize)
	yy := b.buf(op, "y", y, nTok*nHeads*headDim, kernels.F32, kernels.BF16)
	xx := b.buf(op, "xBC", xBC, nTok*width, kernels.F32, kernels.BF16)
	dt := b.buf(op, "dtRaw", dtRaw, nTok*nHeads, kernels.F32)
	al, db, dd := b.buf(op, "aLog", aLog, nHeads, kernels.F32), b.buf(op, "dtBias", dtBias, nHeads, kernels.F32), b.buf(op, "d", d, nHeads, kernels.F32)
	st, slots := b.slotsOf(op, "state", state, per)
	rr := b.buf(op, "runs", runs, 4*nRuns, kernels.I32)
	if nRuns == 0 || !usable(yy, xx, dt, al, db, dd, st, rr) {
		return
	}
	args := []any{yy.ptr, xx.ptr, dt.ptr, al.ptr, db.ptr, dd.ptr, st.ptr, rr.ptr,
		int32(nTok), int32(slots), int32(nHeads), int32(headDim), int32(nGroups), int32(stateSize)}
	act := ssdAct(yy, nil, xx)
	if b.ssdChunked(nRuns, nTok, headDim, stateSize) {
		b.launch(ssdKernel("ssd_chunked", act), D2(nRuns, nHeads), D1(ssdBlock), ssdChunkedShared(headDim, stateSize), ssdArgs(args, act)...)
		return
	}
	b.launch(ssdKernel("ssd_scan", act), D2(nHeads*headDim, nRuns), D1(warpRound(stateSize, ssdMaxState)), 0, ssdArgs(args, act)...)
}

// ssdAct is the act flag word of the scan's _as kernels: bit 0 the
// output (y, dxBC), 1 dy, 2 xBC, each set where that operand is BF16.
func ssdAct(out, dy, xBC *buffer) int32 {
	act := bf16Mask(out) | bf16Mask(xBC)<<2
	if dy != nil {
		act |= bf16Mask(dy) << 1
	}
	return act
}

// ssdKernel is kernel base's f32 name, or its _as twin's where act is set.
func ssdKernel(base string, act int32) string {
	if act != 0 {
		return base + "_as"
	}
	return base + "_f32"
}

// ssdArgs is args with act appended for an _as kernel.
func ssdArgs(args []any, act int32) []any {
	if act != 0 {
		return append(args, act)
	}
	return args
}

// SSDScanBackward takes scratch from the pool for the saved states
// (every chunk's start, or every ssdReplay tokens' on the recurrent path):
// (⌊nTok/k⌋ + nRuns) × nHeads states bound Σ over runs of ⌈count/k⌉; and
// for each head's share of B's and C's gradients (nTok × nHeads ×
// 2·stateSize). Nothing is summed with atomics, so a backward gives the
// same bits every time: after the backward kernel, ssd_group_sum_f32 sums
// B's and C's over a group's heads in head order (and zeroes the rows no
// run covers), and ssd_init_sum_f32 adds each run's initial-state
// gradient, which the backward left in the run's first saved state, into
// dState in run order (where there are slots). Three launches, as many
// as before these sums, when dxBC and ddtRaw were zeroed first for
// atomics to add into.
func (b *Backend) SSDScanBackward(dxBC, ddtRaw, dState, dy, xBC, dtRaw, aLog, dtBias, d, state, runs kernels.Buffer, nRuns, nTok, nHeads, headDim, nGroups, stateSize int) {
	const op = "SSDScanBackward"
	width, per := ssmOperands(op, nRuns, nTok, nHeads, headDim, nGroups, stateSize)
	dx := b.buf(op, "dxBC", dxBC, nTok*width, kernels.F32, kernels.BF16)
	ddt := b.buf(op, "ddtRaw", ddtRaw, nTok*nHeads, kernels.F32)
	dyy := b.buf(op, "dy", dy, nTok*nHeads*headDim, kernels.F32, kernels.BF16)
	xx := b.buf(op, "xBC", xBC, nTok*width, kernels.F32, kernels.BF16)
	dt := b.buf(op, "dtRaw", dtRaw, nTok*nHeads, kernels.F32)
	al, db, dd := b.buf(op, "aLog", aLog, nHeads, kernels.F32), b.buf(op, "dtBias", dtBias, nHeads, kernels.F32), b.buf(op, "d", d, nHeads, kernels.F32)
	st, slots := b.slotsOf(op, "state", state, per)
	dst := &buffer{owner: b}
	if slots > 0 {
		dst = b.buf(op, "dState", dState, slots*per, kernels.F32)
	}
	rr := b.buf(op, "runs", runs, 4*nRuns, kernels.I32)
	if nRuns == 0 || !usable(dx, ddt, dyy, xx, dt, al, db, dd, st, dst, rr) {
		return
	}
	chunked := b.ssdChunked(nRuns, nTok, headDim, stateSize)
	every := ssdSaveEvery(chunked)
	saved, heads := ssdBackwardScratch(chunked, nRuns, nTok, nHeads, headDim, stateSize)
	i32(op, saved, heads)
	ck, ok := b.scratch(4 * saved)
	if !ok {
		return
	}
	defer b.putScratch(ck, 4*saved)
	part, ok := b.scratch(4 * heads)
	if !ok {
		return
	}
	defer b.putScratch(part, 4*heads)
	args := []any{dx.ptr, ddt.ptr, part, ck, dst.ptr, dyy.ptr, xx.ptr, dt.ptr, al.ptr, db.ptr, dd.ptr, st.ptr, rr.ptr,
		int32(nTok), int32(slots), int32(nHeads), int32(headDim), int32(nGroups), int32(stateSize)}
	act := ssdAct(dx, dyy, xx)
	if chunked {
		b.launch(ssdKernel("ssd_chunked_backward", act), D2(nRuns, nHeads), D1(ssdBlock), ssdChunkedBackwardShared(headDim, stateSize),
			ssdArgs(args, act)...)
	} else {
		b.launch(ssdKernel("ssd_scan_backward", act), D2(nHeads, nRuns), D1(warpRound(stateSize, ssdMaxState)), 0, ssdArgs(args, act)...)
	}
	outAct := act & 1 // the sums store only into dxBC
	b.launch(ssdKernel("ssd_group_sum", outAct), D1(nTok), D1(ssdSumBlock), 0, ssdArgs([]any{dx.ptr, ddt.ptr, part, rr.ptr,
		int32(nRuns), int32(nTok), int32(slots), int32(nHeads), int32(headDim), int32(nGroups), int32(stateSize)}, outAct)...)
	if slots > 0 {
		b.launch("ssd_init_sum_f32", D1(min((per+ssdSumBlock-1)/ssdSumBlock, maxGridStrideBlocks)), D1(ssdSumBlock), 0, dst.ptr, ck, rr.ptr,
			int32(nRuns), int32(nTok), int32(slots), int32(per), int32(every))
	}
}

// ssdBackwardScratch is the f32 elements of SSDScanBackward's two
// scratch buffers: the saved states (every chunk's start, or every
// ssdReplay tokens'; ⌊nTok/k⌋ + nRuns bounds Σ over runs of ⌈count/k⌉)
// and the heads' shares of B's and C's gradients.
func ssdBackwardScratch(chunked bool, nRuns, nTok, nHeads, headDim, stateSize int) (saved, heads int) {
	return (nTok/ssdSaveEvery(chunked) + nRuns) * nHeads * headDim * stateSize, nTok * nHeads * 2 * stateSize
}

// ssdSaveEvery is how many tokens apart the backward saves a state.
func ssdSaveEvery(chunked bool) int {
	if chunked {
		return ssdChunk
	}
	return ssdReplay
}

// SSDBackwardPoolBytes is the pool blocks (ScratchClass each) that
// SSDScanBackward of nTok tokens in nRuns runs holds at once on the path
// SSDAuto picks, and that the pool keeps for the run: what sizing the
// pool before launch (the estimate) counts for a Mamba-2 model.
func SSDBackwardPoolBytes(nRuns, nTok, nHeads, headDim, stateSize int) int {
	saved, heads := ssdBackwardScratch(ssdAutoChunked(nRuns, nTok, headDim, stateSize), nRuns, nTok, nHeads, headDim, stateSize)
	return ScratchClass(4*saved) + ScratchClass(4*heads)
}

func groupShape(op string, rows, dim, groups int) int {
	positive(op, rows, dim, groups)
	i32(op, rows*dim)
	if dim%groups != 0 {
		panic(fmt.Sprintf("cuda: %s: dim %d not a multiple of groups %d", op, dim, groups))
	}
	return dim / groups
}

func (b *Backend) GroupedGatedRMSNorm(out, rstd, x, z, w kernels.Buffer, rows, dim, groups int, eps float32) {
	const op = "GroupedGatedRMSNorm"
	gs := groupShape(op, rows, dim, groups)
	o := b.buf(op, "out", out, rows*dim, kernels.F32, kernels.BF16)
	r := b.optBuf(op, "rstd", rstd, rows*groups)
	xx, zz := b.buf(op, "x", x, rows*dim, kernels.F32, kernels.BF16), b.buf(op, "z", z, rows*dim, kernels.F32, kernels.BF16)
	ww := b.buf(op, "w", w, dim, kernels.F32, kernels.BF16)
	if !usable(o, r, xx, zz, ww) {
		return
	}
	name, act := weightKernel(op, "grouped_gated_rmsnorm_f32", "grouped_gated_rmsnorm_wbf16", ww), bf16Mask(o, xx, zz)
	args := []any{o.ptr, r.ptr, xx.ptr, zz.ptr, ww.ptr, int32(gs), int32(groups), eps}
	if act != 0 {
		name, args = weightKernel(op, "grouped_gated_rmsnorm_as", "grouped_gated_rmsnorm_wbf16_as", ww), append(args, act)
	}
	b.launch(name, D1(rows*groups), D1(warpRound(gs, rowBlock)), 0, args...)
}

func (b *Backend) GroupedGatedRMSNormBackward(dx, dz, dy, x, z, w, rstd kernels.Buffer, rows, dim, groups int) {
	const op = "GroupedGatedRMSNormBackward"
	gs := groupShape(op, rows, dim, groups)
	dX, dZ := b.buf(op, "dx", dx, rows*dim, kernels.F32, kernels.BF16), b.buf(op, "dz", dz, rows*dim, kernels.F32, kernels.BF16)
	dY := b.buf(op, "dy", dy, rows*dim, kernels.F32, kernels.BF16)
	xx, zz := b.buf(op, "x", x, rows*dim, kernels.F32, kernels.BF16), b.buf(op, "z", z, rows*dim, kernels.F32, kernels.BF16)
	ww := b.buf(op, "w", w, dim, kernels.F32, kernels.BF16)
	r := b.buf(op, "rstd", rstd, rows*groups, kernels.F32)
	if !usable(dX, dZ, dY, xx, zz, ww, r) {
		return
	}
	name, act := weightKernel(op, "grouped_gated_rmsnorm_backward_f32", "grouped_gated_rmsnorm_backward_wbf16", ww), bf16Mask(dX, dZ, dY, xx, zz)
	args := []any{dX.ptr, dZ.ptr, dY.ptr, xx.ptr, zz.ptr, ww.ptr, r.ptr, int32(gs), int32(groups)}
	if act != 0 {
		name, args = weightKernel(op, "grouped_gated_rmsnorm_backward_as", "grouped_gated_rmsnorm_backward_wbf16_as", ww), append(args, act)
	}
	b.launch(name, D1(rows*groups), D1(warpRound(gs, rowBlock)), 0, args...)
}
