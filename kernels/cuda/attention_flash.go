package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The flash attention kernels (attention_flash.cu, attention_decode.cu,
// attention_flash_backward.cu): which one an Attention or
// AttentionBackward call runs, their launch shapes and shared memory.

// AttentionPath picks the forward kernel. The kernels agree within the
// conformance tolerances on every input, so the choice is speed only.
type AttentionPath int

const (
	// AttentionAuto runs split-KV decoding when there is at most one
	// token per sequence row of the block table (a decode step) and the
	// tiled flash kernels otherwise (prefill, training): the tensor-core
	// ones when the caches are bf16 (on a bf16 copy of an f32 q:
	// prefillOnTensorCores), the f32 or bf16 ones of
	// attention_flash.cu otherwise.
	AttentionAuto AttentionPath = iota
	// AttentionFlash always runs attention_flash.cu's tiled kernel for an
	// f32 q (the tensor-core one for a bf16 q).
	AttentionFlash
	// AttentionDecode always runs split-KV decoding with the split
	// length chosen for the GPU.
	AttentionDecode
	// AttentionDecodeSplit runs split-KV decoding with splits of
	// decodeTestSplit keys, so short sequences are split too and the
	// combine pass runs (for tests).
	AttentionDecodeSplit
)

// SetAttentionPath makes Attention run path (for tests and benchmarks).
func (b *Backend) SetAttentionPath(p AttentionPath) { b.attnPath = p }

const (
	// flashThreads, flashRows and flashKeys are FLASH_THREADS,
	// FLASH_ROWS and FLASH_KEYS of flash.cuh; flashMaxHeadDim is its
	// largest HD. Head dims above it run the scalar attention.cu and
	// attention_backward.cu (f32 caches only).
	flashThreads    = 128
	flashRows       = 64
	flashKeys       = 64
	flashMaxHeadDim = 128
	// decodeThreads and decodeHeads are attention_decode.cu's
	// DECODE_THREADS and DECODE_HEADS (query heads per block).
	decodeThreads = 128
	decodeHeads   = 8
	// decodeTargetBlocks is how many blocks a decode launch aims for (two
	// per SM of an H200) before it stops splitting; decodeMinSplit keeps
	// a split long enough to amortise its partial; decodeMaxSplits
	// bounds the partials per row.
	decodeTargetBlocks = 264
	decodeMinSplit     = 256
	decodeMaxSplits    = 32
	decodeTestSplit    = 8
)

// flashHD is the template head dim (a multiple of 16) headDim is padded to.
func flashHD(headDim int) int {
	for _, hd := range []int{16, 32, 64, 128} {
		if headDim <= hd {
			return hd
		}
	}
	panic(fmt.Sprintf("cuda: flash attention: headDim %d above %d", headDim, flashMaxHeadDim))
}

// kvSuffix names the kernel variant for the caches' dtype.
func kvSuffix(dt kernels.DType) string {
	if dt == kernels.BF16 {
		return "bf16"
	}
	return "f32"
}

func align128(n int) int { return (n + 127) / 128 * 128 }

// flashForwardShared mirrors FlashFwdSmem<HD, T>::bytes.
func flashForwardShared(hd, ts int) int {
	return smemEnd(3*flashRows*hd*ts + flashRows*flashKeys*4 + flashRows*flashKeys*ts + flashRows*hd*4 + (3*flashRows+3)*4)
}

// smemEnd mirrors GRPO_SMEM_END (common.cuh): shared bytes rounded up to
// 16, since nvcc may read a region's last ints as one 16-byte load.
func smemEnd(n int) int { return (n + 15) / 16 * 16 }

// flashBackwardShared mirrors FlashBwdSmem<HD, T>::bytes.
func flashBackwardShared(hd, ts int) int {
	n := 4*flashRows*hd*ts + 2*flashRows*flashKeys*4 + 2*flashRows*flashKeys*ts + (5*flashRows+4)*4
	if ts == 4 {
		n += flashKeys * hd * 4
	}
	return smemEnd(n)
}

// decodeSplitLen is the keys per split of a decode launch over caches of
// maxLen positions with base blocks before splitting.
func (b *Backend) decodeSplitLen(maxLen, base int) int {
	if b.attnPath == AttentionDecodeSplit {
		return decodeTestSplit
	}
	n := min((decodeTargetBlocks+base-1)/base, (maxLen+decodeMinSplit-1)/decodeMinSplit, decodeMaxSplits)
	n = max(n, 1)
	return (maxLen + n - 1) / n
}

// attentionFlash runs Attention on the flash kernels; the operands are
// checked.
func (b *Backend) attentionFlash(o, l, qq, kc, vc, s, p, tb *buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, av attnVariant) {
	group := nHead / nKV
	kv := kvSuffix(kc.dt)
	common := []any{s.ptr, p.ptr, tb.ptr, int32(pages.BlockSize), int32(pages.MaxBlocks), int32(nTok), int32(nHead), int32(nKV), int32(headDim)}
	decode := b.attnPath == AttentionDecode || b.attnPath == AttentionDecodeSplit ||
		b.attnPath == AttentionAuto && nTok <= pages.Seqs()
	if !decode {
		hd, ts := flashHD(headDim), kc.dt.Size()
		args := append([]any{o.ptr, l.ptr, qq.ptr, kc.ptr, vc.ptr}, common...)
		b.launch(fmt.Sprintf("attention_flash_hd%d_%s", hd, kv), D2((nTok*group+flashRows-1)/flashRows, nKV), D1(flashThreads),
			flashForwardShared(hd, ts), append(args, scale, av.window, av.sinks.ptr)...)
		return
	}
	// The splits cover a token's window, at most span keys.
	chunks := (group + decodeHeads - 1) / decodeHeads
	span := av.span(pages.MaxLen())
	splitLen := b.decodeSplitLen(span, nTok*nKV*chunks)
	nSplit := (span + splitLen - 1) / splitLen
	dpl := (headDim + 31) / 32
	name := fmt.Sprintf("attention_decode_dpl%d_%s", dpl, kv)
	shared := 4 * decodeThreads / 32 * decodeHeads * (2 + 32*dpl)
	grid := Dim3{uint32(nTok), uint32(nKV * chunks), uint32(nSplit)}
	tail := append(common, int32(splitLen), scale, av.window, av.sinks.ptr)
	if nSplit == 1 {
		b.launch(name, grid, D1(decodeThreads), shared, append([]any{o.ptr, l.ptr, DevicePtr(0), DevicePtr(0), DevicePtr(0), qq.ptr, kc.ptr, vc.ptr}, tail...)...)
		return
	}
	// Partials: max and sum per (row, split), then the outputs.
	parts := nTok * nHead * nSplit
	bytes := 4 * parts * (2 + headDim)
	// Through scratch, not the pool directly: while a graph is captured the
	// partials must stay the graph's (graph.go).
	scratch, ok := b.scratch(bytes)
	if !ok {
		return
	}
	pm, pl, po := scratch, scratch+DevicePtr(4*parts), scratch+DevicePtr(8*parts)
	b.launch(name, grid, D1(decodeThreads), shared, append([]any{o.ptr, l.ptr, pm, pl, po, qq.ptr, kc.ptr, vc.ptr}, tail...)...)
	b.launch("attention_decode_combine", D1(nTok*nHead), D1(decodeThreads), 0, o.ptr, l.ptr, pm, pl, po, int32(nSplit), int32(headDim),
		av.sinks.ptr, int32(nHead))
	b.putScratch(scratch, bytes) // stream order: the next user runs after the combine
}

// attentionBackwardFlash runs AttentionBackward on the two flash passes.
func (b *Backend) attentionBackwardFlash(dq, dk, dv, dout, out, lse, q, kc, vc, s, p, tb *buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, window int32) {
	group := nHead / nKV
	hd, ts, kv := flashHD(headDim), kc.dt.Size(), kvSuffix(kc.dt)
	shared := flashBackwardShared(hd, ts)
	numBlocks := kc.n / (pages.BlockSize * nKV * headDim)
	tiles := (pages.BlockSize + flashKeys - 1) / flashKeys
	b.launch(fmt.Sprintf("attention_flash_dkdv_hd%d_%s", hd, kv), D2(numBlocks*tiles, nKV), D1(flashThreads), shared,
		dk.ptr, dv.ptr, dout.ptr, out.ptr, lse.ptr, q.ptr, kc.ptr, vc.ptr, s.ptr, p.ptr, tb.ptr,
		int32(pages.BlockSize), int32(pages.MaxBlocks), int32(pages.Seqs()), int32(nTok), int32(nHead), int32(nKV), int32(headDim), scale, window)
	b.launch(fmt.Sprintf("attention_flash_dq_hd%d_%s", hd, kv), D2((nTok*group+flashRows-1)/flashRows, nKV), D1(flashThreads), shared,
		dq.ptr, dout.ptr, out.ptr, lse.ptr, q.ptr, kc.ptr, vc.ptr, s.ptr, p.ptr, tb.ptr,
		int32(pages.BlockSize), int32(pages.MaxBlocks), int32(nTok), int32(nHead), int32(nKV), int32(headDim), scale, window)
}

func init() {
	for _, kv := range []string{"bf16", "f32"} {
		for _, hd := range []int{16, 32, 64, 128} {
			kernelMaxBlock[fmt.Sprintf("attention_flash_hd%d_%s", hd, kv)] = flashThreads
			kernelMaxBlock[fmt.Sprintf("attention_flash_dkdv_hd%d_%s", hd, kv)] = flashThreads
			kernelMaxBlock[fmt.Sprintf("attention_flash_dq_hd%d_%s", hd, kv)] = flashThreads
		}
		for dpl := 1; dpl <= 4; dpl++ {
			kernelMaxBlock[fmt.Sprintf("attention_decode_dpl%d_%s", dpl, kv)] = decodeThreads
		}
	}
	kernelMaxBlock["attention_decode_combine"] = decodeThreads
}
