package kernels

// BF16AttentionHeadDim reports whether attention over heads of headDim may
// take a BF16 q: Attention, AttentionSharedPrefix, AttentionBackward and
// AttentionInputs (which then writes q in bf16) accept one on every
// backend, with BF16 caches beside it, for head dims that are multiples of
// 8 up to 256 — the shapes a GPU's tensor-core kernels tile (16-byte rows
// of bf16, 16 × 8 mma tiles, three template widths). Outside them q stays
// F32. The arithmetic is f32 either way; a BF16 q only rounds q to bf16,
// as a BF16 cache rounds k and v.
func BF16AttentionHeadDim(headDim int) bool {
	return headDim > 0 && headDim%8 == 0 && headDim <= 256
}
