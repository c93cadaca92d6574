package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The tensor-core flash kernels over bf16 operands
// (attention_flash_tc.cu, attention_flash_tc_backward.cu): Attention and
// AttentionBackward run them when q and the K/V caches are all BF16 (as
// the LoRA ops take lora_tc.cu when their activation is BF16), for head
// dims up to 256 that are multiples of 8. With an f32 q the flash kernels
// of attention_flash.go run as before.

const (
	// ftcThreads and ftcRows are flash_tc.cuh's FTC_THREADS and
	// FTC_ROWS; ftcMaxHeadDim its largest template head dim.
	ftcThreads    = 128
	ftcRows       = 64
	ftcMaxHeadDim = 256
)

// ftcHD is the template head dim (64, 128 or 256) headDim is padded to.
func ftcHD(headDim int) int {
	for _, hd := range []int{64, 128, 256} {
		if headDim <= hd {
			return hd
		}
	}
	panic(fmt.Sprintf("cuda: tensor-core flash attention: headDim %d above %d", headDim, ftcMaxHeadDim))
}

// ftcKeys and ftcQRows mirror flash_tc.cuh's ftc_keys and ftc_qrows; ftcLD
// is FTC_LD, a shared tile's row stride in elements.
func ftcKeys(hd int) int {
	if hd >= 256 {
		return 32
	}
	return 64
}
func ftcQRows(hd int) int {
	if hd >= 128 {
		return 32
	}
	return 64
}
func ftcLD(hd int) int { return hd + 8 }

// ftcForwardShared, ftcDqShared and ftcDkdvShared mirror FtcFwdSmem,
// FtcDqSmem and FtcDkdvSmem's bytes.
func ftcForwardShared(hd int) int {
	return smemEnd((ftcRows+2*ftcKeys(hd))*ftcLD(hd)*2 + (3*ftcRows+3)*4)
}
func ftcDqShared(hd int) int {
	return smemEnd((2*ftcRows+2*ftcKeys(hd))*ftcLD(hd)*2 + (6*ftcRows+3)*4)
}
func ftcDkdvShared(hd int) int {
	qr := ftcQRows(hd)
	return smemEnd((2*ftcRows+2*qr)*ftcLD(hd)*2 + (5*qr+33)*4)
}

// tensorCoreAttention reports whether an attention op with these q and
// caches takes the tensor-core kernels: when q is BF16. It then requires
// what those kernels need — BF16 caches, headDim ≤ 256 and a multiple of
// 8, and q and the caches 16-byte aligned (cp.async copies 16-byte
// chunks) — and panics with op's name otherwise.
func tensorCoreAttention(op string, q, k *buffer, headDim int) bool {
	if q.dt != kernels.BF16 {
		return false
	}
	bf16Query(op, q.dt, k.dt, headDim)
	for _, x := range []struct {
		name string
		p    DevicePtr
	}{{"q", q.ptr}, {"kCache", k.ptr}} {
		if x.p%16 != 0 {
			panic(fmt.Sprintf("cuda: %s: bf16 %s at %#x is not 16-byte aligned (cp.async)", op, x.name, uintptr(x.p)))
		}
	}
	return true
}

// bf16Out checks the contract of a BF16 attention activation (Attention's
// out; AttentionBackward's dq, dout and out): only the tensor-core kernels
// read and write bf16 there, so a BF16 q must be beside it; the f32 flash,
// scalar and split-KV kernels refuse it, panicking with op's name.
func bf16Out(op, name string, x, q kernels.DType) {
	if x == kernels.BF16 && q != kernels.BF16 {
		panic(fmt.Sprintf("cuda: %s: %s is bf16 but q is %v; bf16 activations need a bf16 q (the tensor-core kernels)", op, name, q))
	}
}

// bf16Query checks the contract of a BF16 q (kernels.BF16AttentionHeadDim):
// BF16 caches beside it and a head dim the tensor-core kernels tile
// (ftcMaxHeadDim is the largest), panicking with op's name otherwise.
func bf16Query(op string, q, kv kernels.DType, headDim int) {
	if q != kernels.BF16 {
		return
	}
	if kv != kernels.BF16 {
		panic(fmt.Sprintf("cuda: %s: q is bf16 but the caches are %v; bf16 attention needs bf16 caches", op, kv))
	}
	if !kernels.BF16AttentionHeadDim(headDim) {
		panic(fmt.Sprintf("cuda: %s: bf16 attention needs headDim ≤ %d and a multiple of 8, got %d", op, ftcMaxHeadDim, headDim))
	}
}

// attentionFlashTC runs Attention on attention_flash_tc.cu.
func (b *Backend) attentionFlashTC(o, l, qq, kc, vc, s, p, tb *buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, av attnVariant) {
	if vc.ptr%16 != 0 {
		panic(fmt.Sprintf("cuda: Attention: bf16 vCache at %#x is not 16-byte aligned (cp.async)", uintptr(vc.ptr)))
	}
	hd, group := ftcHD(headDim), nHead/nKV
	b.launch(fmt.Sprintf("attention_flash_tc_hd%d", hd), D2((nTok*group+ftcRows-1)/ftcRows, nKV), D1(ftcThreads), ftcForwardShared(hd),
		o.ptr, l.ptr, qq.ptr, kc.ptr, vc.ptr, s.ptr, p.ptr, tb.ptr, int32(pages.BlockSize), int32(pages.MaxBlocks),
		int32(nTok), int32(nHead), int32(nKV), int32(headDim), scale, av.window, av.sinks.ptr, bf16Mask(o))
}

// prefillOnTensorCores reports whether an Attention call with an f32 q
// over bf16 caches runs the tensor-core kernels on a bf16 copy of q: a
// prefill or scoring pass (more tokens than sequences; a decode step
// keeps the split-KV kernels, which read q as it is) under the automatic
// path, with a head dim and cache alignment those kernels take. The
// copy costs one pass over q; the bf16 flash kernels it replaces round q
// to bf16 as their tensor cores take it anyway, and their f32 softmax
// over a shared tile serialises on shared-memory banks (the H100 lease:
// prefill saturated at 63 TFLOP/s), and head dims above 128 have only
// the scalar kernel otherwise.
func (b *Backend) prefillOnTensorCores(q, k, v *buffer, pages kernels.KVPages, nTok, headDim int) bool {
	return q.dt == kernels.F32 && k.dt == kernels.BF16 && b.attnPath == AttentionAuto && nTok > pages.Seqs() &&
		headDim <= ftcMaxHeadDim && headDim%8 == 0 && k.ptr%16 == 0 && v.ptr%16 == 0
}

// attentionFlashTCFromF32 runs Attention on attention_flash_tc.cu with q
// rounded to bf16 in pooled scratch.
func (b *Backend) attentionFlashTCFromF32(o, l, qq, kc, vc, s, p, tb *buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, av attnVariant) {
	n := nTok * nHead * headDim
	tmp, ok := b.scratch(2 * n)
	if !ok {
		return
	}
	defer b.putScratch(tmp, 2*n)
	b.elementwise("f32_to_bf16", n, tmp, qq.ptr, int32(n))
	qb := &buffer{owner: b, ptr: tmp, n: n, dt: kernels.BF16}
	b.attentionFlashTC(o, l, qb, kc, vc, s, p, tb, pages, nTok, nHead, nKV, headDim, scale, av)
}

// attentionBackwardFlashTC runs AttentionBackward on
// attention_flash_tc_backward.cu: the dQ pass first, which leaves dO in
// bf16 and D per row in scratch for the dK/dV pass (one pass, or at head
// dim 256 a dV pass and a dK pass).
func (b *Backend) attentionBackwardFlashTC(dq, dk, dv, dout, out, lse, q, kc, vc, s, p, tb *buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, window int32) {
	if vc.ptr%16 != 0 {
		panic(fmt.Sprintf("cuda: AttentionBackward: bf16 vCache at %#x is not 16-byte aligned (cp.async)", uintptr(vc.ptr)))
	}
	hd, group := ftcHD(headDim), nHead/nKV
	nq := nTok * nHead * headDim
	dobBytes := (2*nq + 15) / 16 * 16
	bytes := dobBytes + 4*nTok*nHead
	scratch, ok := b.scratch(bytes)
	if !ok {
		return
	}
	dob, dD := scratch, scratch+DevicePtr(dobBytes)
	b.launch(fmt.Sprintf("attention_flash_tc_dq_hd%d", hd), D2((nTok*group+ftcRows-1)/ftcRows, nKV), D1(ftcThreads), ftcDqShared(hd),
		dq.ptr, dob, dD, dout.ptr, out.ptr, lse.ptr, q.ptr, kc.ptr, vc.ptr, s.ptr, p.ptr, tb.ptr,
		int32(pages.BlockSize), int32(pages.MaxBlocks), int32(nTok), int32(nHead), int32(nKV), int32(headDim), scale, window,
		bf16Mask(dq, dout, out))
	numBlocks := kc.n / (pages.BlockSize * nKV * headDim)
	tiles := (pages.BlockSize + ftcRows - 1) / ftcRows
	for _, mode := range ftcDkdvModes(hd) {
		b.launch(fmt.Sprintf("attention_flash_tc_dkdv_hd%d_%s", hd, mode), D2(numBlocks*tiles, nKV), D1(ftcThreads), ftcDkdvShared(hd),
			dk.ptr, dv.ptr, dob, dD, lse.ptr, q.ptr, kc.ptr, vc.ptr, s.ptr, p.ptr, tb.ptr,
			int32(pages.BlockSize), int32(pages.MaxBlocks), int32(pages.Seqs()), int32(nTok), int32(nHead), int32(nKV), int32(headDim), scale, window)
	}
	b.putScratch(scratch, bytes) // stream order: the next user runs after the dK/dV pass
}

// ftcDkdvModes are the dK/dV kernels a backward at template head dim hd
// launches: one for both below 256, where both accumulators fit in
// registers; a dV and a dK pass at 256.
func ftcDkdvModes(hd int) []string {
	if hd >= 256 {
		return []string{"dv", "dk"}
	}
	return []string{"dkdv"}
}

func init() {
	for _, hd := range []int{64, 128, 256} {
		kernelMaxBlock[fmt.Sprintf("attention_flash_tc_hd%d", hd)] = ftcThreads
		kernelMaxBlock[fmt.Sprintf("attention_flash_tc_dq_hd%d", hd)] = ftcThreads
		for _, mode := range ftcDkdvModes(hd) {
			kernelMaxBlock[fmt.Sprintf("attention_flash_tc_dkdv_hd%d_%s", hd, mode)] = ftcThreads
		}
	}
}
