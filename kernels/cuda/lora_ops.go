package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The LoRA ops (kernels.LoRAOps, kernels.LoRATrainOps). The expand
// kernels take up to loraParts parts per launch (a projection group: q/k/v
// is three), as kernel arguments. An op whose activation operand is BF16
// (x or xa of the shrink, xa of the expand and its backward, x of the
// shrink's backward) runs on tensor cores (lora_tc.cu: 64 × 64 tiles,
// every f32 operand rounded to bf16 as it is staged, f32 accumulation);
// with f32 activations it runs lora.cu's f32 kernels, which the f32 model
// paths (and their f32 tolerances against the CPU backend) rely on. The
// parts' Y (one dtype per call) and the shrink backward's dx may be BF16
// on either path: the kernels' _ybf16 and _dxbf16 variants read them
// widened and round once at the store.

const (
	loraParts = 3
	// loraWarps is LORA_WARPS: the warps of a 256-thread block, each one
	// output element of the shrink and of the expand's dxa.
	loraWarps = 8
	// loraMaxRank is 32 × LORA_MAX_RANK_PER_LANE: the largest rank
	// lora_expand_backward_db holds in registers.
	loraMaxRank = 256
	loraBlock   = 256
)

// loraPart is a checked part: its buffers and its first column of xa.
type loraPart struct {
	kernels.LoRAPart
	b, db, y *buffer
	o        int
}

// loraParts checks parts for rows and returns them with the total rank;
// their Ys must share one dtype, F32 or BF16 (ps[0].y.dt).
func (b *Backend) loraParts(op string, parts []kernels.LoRAPart, rows int) ([]loraPart, int, bool) {
	if len(parts) == 0 {
		panic(fmt.Sprintf("cuda: %s: no parts", op))
	}
	ps := make([]loraPart, len(parts))
	o, ok := 0, true
	for i, p := range parts {
		positive(op, p.Rank, p.Out, p.YCols)
		i32(op, rows*p.YCols, p.Out*p.Rank)
		if p.YOff < 0 || p.YOff+p.Out > p.YCols {
			panic(fmt.Sprintf("cuda: %s: part %d's columns [%d, %d) outside its Y's %d", op, i, p.YOff, p.YOff+p.Out, p.YCols))
		}
		if p.Rank > loraMaxRank {
			panic(fmt.Sprintf("cuda: %s: part %d has rank %d; lora.cu holds at most %d", op, i, p.Rank, loraMaxRank))
		}
		ps[i] = loraPart{LoRAPart: p, o: o,
			b:  b.buf(op, fmt.Sprintf("part %d B", i), p.B, p.Out*p.Rank, kernels.F32),
			db: b.optBuf(op, fmt.Sprintf("part %d DB", i), p.DB, p.Out*p.Rank),
			y:  b.buf(op, fmt.Sprintf("part %d Y", i), p.Y, rows*p.YCols, kernels.F32, kernels.BF16)}
		if ps[i].y.dt != ps[0].y.dt {
			panic(fmt.Sprintf("cuda: %s: part %d's Y is %v, part 0's %v: the parts of one call share one Y dtype", op, i, ps[i].y.dt, ps[0].y.dt))
		}
		b.partTraffic(op, ps[i].y, rows, p.Out)
		ok = ok && usable(ps[i].b, ps[i].db, ps[i].y)
		o += p.Rank
	}
	return ps, o, ok
}

// partArgs are the kernel arguments of up to loraParts parts (unused
// slots are empty parts, whose blocks return at once), and the largest
// Out and Rank among them.
func partArgs(ps []loraPart) (args []any, maxOut, maxRank int) {
	for i := range loraParts {
		if i >= len(ps) {
			args = append(args, DevicePtr(0), DevicePtr(0), DevicePtr(0), int32(0), int32(0), int32(1), int32(0), int32(0), float32(0))
			continue
		}
		p := ps[i]
		args = append(args, p.b.ptr, p.db.ptr, p.y.ptr, int32(p.Rank), int32(p.Out), int32(p.YCols), int32(p.YOff), int32(p.o), p.Scale)
		maxOut, maxRank = max(maxOut, p.Out), max(maxRank, p.Rank)
	}
	return args, maxOut, maxRank
}

// ySuffix names the kernel variant for the parts' Y dtype: "" for F32,
// "_ybf16" for BF16.
func ySuffix(ps []loraPart) string {
	if ps[0].y.dt == kernels.BF16 {
		return "_ybf16"
	}
	return ""
}

// eachLaunch calls fn for the parts in groups of loraParts.
func eachLaunch(ps []loraPart, fn func(group []loraPart)) {
	for lo := 0; lo < len(ps); lo += loraParts {
		fn(ps[lo:min(lo+loraParts, len(ps))])
	}
}

func (b *Backend) LoRAShrink(xa, x, a kernels.Buffer, rows, in, ranks int) {
	const op = "LoRAShrink"
	positive(op, rows, in, ranks)
	i32(op, rows*in, ranks*in, rows*ranks)
	o := b.buf(op, "xa", xa, rows*ranks, kernels.F32, kernels.BF16)
	xx := b.buf(op, "x", x, rows*in, kernels.F32, kernels.BF16)
	aa := b.buf(op, "a", a, ranks*in, kernels.F32)
	if !usable(o, xx, aa) {
		return
	}
	b.dev.CountFLOPs(gemmFLOPs(rows, ranks, in)) // xa = x·Aᵀ
	if xx.dt == kernels.BF16 || o.dt == kernels.BF16 {
		name := map[[2]kernels.DType]string{{kernels.BF16, kernels.F32}: "lora_shrink_tc_xbf16",
			{kernels.F32, kernels.BF16}: "lora_shrink_tc_xabf16", {kernels.BF16, kernels.BF16}: "lora_shrink_tc_bf16"}[[2]kernels.DType{xx.dt, o.dt}]
		b.launch(name, D2(ceilDiv(rows, tcTile), ceilDiv(ranks, tcTile)), D1(tcThreads), 0, o.ptr, xx.ptr, aa.ptr, int32(rows), int32(in), int32(ranks))
		return
	}
	b.launch("lora_shrink_f32", D2(rows, ceilDiv(ranks, loraWarps)), D1(loraBlock), 0, o.ptr, xx.ptr, aa.ptr, int32(rows), int32(in), int32(ranks))
}

func (b *Backend) LoRAExpand(xa kernels.Buffer, parts []kernels.LoRAPart, rows int) {
	const op = "LoRAExpand"
	positive(op, rows)
	ps, ranks, ok := b.loraParts(op, parts, rows)
	i32(op, rows*ranks)
	x := b.buf(op, "xa", xa, rows*ranks, kernels.F32, kernels.BF16)
	if !ok || !usable(x) {
		return
	}
	var flops int64
	for _, p := range ps {
		flops += gemmFLOPs(rows, p.Out, p.Rank) // y += scale·xa·Bᵀ
	}
	b.dev.CountFLOPs(flops)
	eachLaunch(ps, func(g []loraPart) {
		args, maxOut, _ := partArgs(g)
		if x.dt == kernels.BF16 {
			grid := Dim3{uint32(ceilDiv(rows, tcTile)), uint32(ceilDiv(maxOut, tcTile)), uint32(len(g))}
			b.launch("lora_expand_tc"+ySuffix(ps), grid, D1(tcThreads), 0, append([]any{x.ptr, int32(rows), int32(ranks)}, args...)...)
			return
		}
		grid := Dim3{uint32(rows), uint32(ceilDiv(maxOut, loraBlock)), uint32(len(g))}
		b.launch("lora_expand_f32"+ySuffix(ps), grid, D1(loraBlock), 0, append([]any{x.ptr, int32(rows), int32(ranks)}, args...)...)
	})
}

// LoRAExpandBackward is one launch per loraParts parts: dxa's blocks, then
// dB's (none when no part of the launch wants dB).
func (b *Backend) LoRAExpandBackward(dxa, xa kernels.Buffer, parts []kernels.LoRAPart, rows int) {
	const op = "LoRAExpandBackward"
	positive(op, rows)
	ps, ranks, ok := b.loraParts(op, parts, rows)
	i32(op, rows*ranks)
	d := b.buf(op, "dxa", dxa, rows*ranks, kernels.F32)
	x := b.buf(op, "xa", xa, rows*ranks, kernels.F32, kernels.BF16)
	if !ok || !usable(d, x) {
		return
	}
	var flops int64
	for _, p := range ps {
		flops += gemmFLOPs(rows, p.Rank, p.Out) // dxa = dy·B
		if p.DB != nil {
			flops += gemmFLOPs(p.Out, p.Rank, rows) // dB = scale·dyᵀ·xa
		}
	}
	b.dev.CountFLOPs(flops)
	eachLaunch(ps, func(g []loraPart) {
		args, maxOut, maxRank := partArgs(g)
		if x.dt == kernels.BF16 {
			b.expandBackwardTC(d, x, g, args, rows, ranks, maxOut, maxRank)
			return
		}
		dxaY, dbX := ceilDiv(maxRank, loraWarps), 0
		for _, p := range g {
			if p.DB != nil {
				dbX = ceilDiv(maxOut, loraWarps)
			}
		}
		blocks := rows*dxaY*len(g) + dbX*len(g)
		i32(op, blocks)
		b.launch("lora_expand_backward_f32"+ySuffix(g), D1(blocks), D1(loraBlock), 0,
			append([]any{d.ptr, x.ptr, int32(rows), int32(ranks), int32(len(g)), int32(dxaY), int32(dbX)}, args...)...)
	})
}

// expandBackwardTC is LoRAExpandBackward's launch on tensor cores for the
// parts g: dxa's 64 × 64 tiles (rows × rank) of every part, then dB's (out
// × rank) of every part when some part wants dB.
func (b *Backend) expandBackwardTC(d, x *buffer, g []loraPart, args []any, rows, ranks, maxOut, maxRank int) {
	rowTiles, rankTiles, outTiles := ceilDiv(rows, tcTile), ceilDiv(maxRank, tcTile), 0
	for _, p := range g {
		if p.DB != nil {
			outTiles = ceilDiv(maxOut, tcTile)
		}
	}
	dxaBlocks := len(g) * rowTiles * rankTiles
	blocks := dxaBlocks + len(g)*outTiles*rankTiles
	i32("LoRAExpandBackward", blocks)
	b.launch("lora_expand_backward_tc"+ySuffix(g), D1(blocks), D1(tcThreads), 0, append([]any{d.ptr, x.ptr, int32(rows), int32(ranks),
		int32(dxaBlocks), int32(rowTiles), int32(rankTiles), int32(outTiles)}, args...)...)
}

// LoRAShrinkBackward is one launch: dx's blocks (rows × ⌈in/256⌉), then
// dA's (⌈in/256⌉ × ⌈ranks/8⌉), each part empty when its output is nil; on
// tensor cores (x BF16) 64 × 64 tiles of each. dx is F32 or BF16 (the
// _dxbf16 kernels).
func (b *Backend) LoRAShrinkBackward(dx, da, dxa, x, a kernels.Buffer, rows, in, ranks int) {
	const op = "LoRAShrinkBackward"
	positive(op, rows, in, ranks)
	i32(op, rows*in, ranks*in, rows*ranks)
	g := b.buf(op, "dxa", dxa, rows*ranks, kernels.F32)
	d, aa := b.optBufOf(op, "dx", dx, rows*in, kernels.F32, kernels.BF16), b.buf(op, "a", a, ranks*in, kernels.F32)
	dA, xx := b.optBuf(op, "da", da, ranks*in), b.buf(op, "x", x, rows*in, kernels.F32, kernels.BF16)
	if !usable(g, d, aa, dA, xx) {
		return
	}
	tc := xx.dt == kernels.BF16
	dxBlocks, daBlocks := 0, 0
	if dx != nil {
		dxBlocks = rows * ceilDiv(in, loraBlock)
		if tc {
			dxBlocks = ceilDiv(rows, tcTile) * ceilDiv(in, tcTile)
		}
		b.dev.CountFLOPs(gemmFLOPs(rows, in, ranks)) // dx gets dxa·A
	}
	if da != nil {
		daBlocks = ceilDiv(in, loraBlock) * ceilDiv(ranks, loraWarps)
		if tc {
			daBlocks = ceilDiv(ranks, tcTile) * ceilDiv(in, tcTile)
		}
		b.dev.CountFLOPs(gemmFLOPs(ranks, in, rows)) // dA = dxaᵀ·x
	}
	i32(op, dxBlocks+daBlocks)
	if dxBlocks+daBlocks == 0 {
		return
	}
	suffix := ""
	if d.dt == kernels.BF16 {
		suffix = "_dxbf16"
	}
	if tc {
		b.launch("lora_shrink_backward_tc"+suffix, D1(dxBlocks+daBlocks), D1(tcThreads), 0,
			d.ptr, dA.ptr, g.ptr, xx.ptr, aa.ptr, int32(rows), int32(in), int32(ranks), int32(dxBlocks))
		return
	}
	b.launch("lora_shrink_backward_f32"+suffix, D1(dxBlocks+daBlocks), D1(loraBlock), 0,
		d.ptr, dA.ptr, g.ptr, xx.ptr, aa.ptr, int32(rows), int32(in), int32(ranks), int32(dxBlocks))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
