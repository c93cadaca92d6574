package cuda

// Launch configurations shared by the ops. They are the single place that
// decides block sizes, so the .cu files and CUDA.md agree with them.
const (
	// elementwiseBlock threads per block for grid-stride kernels, and at
	// most maxGridStrideBlocks blocks: enough to fill an H200 (132 SMs × 16
	// resident blocks of 256) while each thread still loops.
	elementwiseBlock    = 256
	maxGridStrideBlocks = 4096
	// rowBlock threads per block for one-block-per-row kernels (RMSNorm).
	rowBlock = 256
	// attentionBlock threads per (token, head) block; attentionMaxHeadDim
	// matches ATTN_MAX_DIM_PER_THREAD (2) × attentionBlock in attention.cu.
	attentionBlock      = 128
	attentionMaxHeadDim = 2 * attentionBlock
	// logSoftmaxMaxBlock threads per row for the vocab-chunked log-softmax
	// and its backward.
	logSoftmaxMaxBlock = 1024
	// attentionBackwardBlock threads per (token, KV head) block of
	// attention_backward_f32: one key of a tile per thread. Its dynamic
	// shared memory must stay within the 48 KiB a launch gets without
	// opting in (cuFuncSetAttribute), which bounds group·headDim.
	attentionBackwardBlock     = 128
	attentionBackwardMaxShared = 48 << 10
	// sumSquaresBlock threads per block and at most sumSquaresMaxBlocks
	// float64 partials for the two-pass SumSquares; the partial count
	// depends only on n, so the summation order does too.
	sumSquaresBlock     = 256
	sumSquaresMaxBlocks = 1024
	// advantagesBlock caps the threads of a GroupAdvantages block (one per
	// group; groups are small) and is the block of the batch-std pass.
	advantagesBlock = 1024
	// sampleMaxBlock threads per row of sample_f32 (one block per row):
	// each of its ~100 passes over a 151k-token row is then 149 loads per
	// thread, and a decode step of 128 sequences is 128 blocks.
	sampleMaxBlock = 1024
)

// elementwise launches a grid-stride kernel over n elements.
func (b *Backend) elementwise(name string, n int, args ...any) {
	if n == 0 {
		return
	}
	blocks := min((n+elementwiseBlock-1)/elementwiseBlock, maxGridStrideBlocks)
	b.launch(name, D1(blocks), D1(elementwiseBlock), 0, args...)
}

// warpRound rounds n threads up to whole warps, at least one and at most
// limit, so narrow rows do not launch idle warps.
func warpRound(n, limit int) int {
	t := (n + 31) / 32 * 32
	return max(32, min(t, limit))
}
