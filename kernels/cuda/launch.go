package cuda

import "github.com/grpo-dev/grpo/kernels"

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
	// shared memory grows with group·headDim; above 48 KiB (a GQA group of
	// 16 with headDim 128 and more) Backend.launch opts the kernel in, up
	// to sm_90's 227 KiB less a margin for its static shared memory.
	attentionBackwardBlock     = 128
	attentionBackwardMaxShared = MaxSharedPerBlockOptIn - 1<<10
	// sumSquaresBlock threads per block and at most sumSquaresMaxBlocks
	// float64 partials for the two-pass SumSquares; the partial count
	// depends only on n, so the summation order does too.
	sumSquaresBlock     = 256
	sumSquaresMaxBlocks = 1024
	// sampleMaxBlock threads per row of sample_f32 (one block per row):
	// each of its three passes over a 151k-token row is then 149 loads
	// per thread, and a decode step of 128 sequences is 128 blocks.
	sampleMaxBlock = 1024
	// attentionInputsBlock caps the threads of an AttentionInputs block
	// (one per rotated pair of a head: 64 for headDim 128).
	attentionInputsBlock = 128
)

// kernelMaxBlock is the largest block each kernel is launched with, and
// so its __launch_bounds__ in the .cu (TestLaunchBoundsMatchPTX checks the
// committed PTX's .maxntid against this table, and Backend.launch every
// launch against it). A bound tells ptxas and the driver's JIT how many
// registers a thread may take: without one, the JIT for a newer GPU may
// give a 1024-thread kernel more than 64 and the launch fails with
// CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES.
var kernelMaxBlock = map[string]int{
	"add_f32": elementwiseBlock, "add_bias_f32": elementwiseBlock, "add_bias_bf16": elementwiseBlock,
	"add_f32_f32_bf16": elementwiseBlock, "add_f32_bf16_bf16": elementwiseBlock, "add_bf16_f32_f32": elementwiseBlock,
	"add_bf16_f32_bf16": elementwiseBlock, "add_bf16_bf16_bf16": elementwiseBlock,
	"add_bias_f32_xbf16": elementwiseBlock, "add_bias_bf16_xbf16": elementwiseBlock,
	"swiglu_f32": elementwiseBlock, "f32_to_bf16": elementwiseBlock, "bf16_to_f32": elementwiseBlock,
	"rope_f32": elementwiseBlock, "fill_f32": elementwiseBlock, "scale_f32": elementwiseBlock,
	"swiglu_backward_f32": elementwiseBlock, "policy_loss_f32": elementwiseBlock, "adamw_f32": elementwiseBlock,
	"sigmoid_gate_f32": elementwiseBlock, "sigmoid_gate_backward_f32": elementwiseBlock,
	"sigmoid_gate_as": elementwiseBlock, "sigmoid_gate_backward_as": elementwiseBlock,
	"swiglu_as": elementwiseBlock, "swiglu_backward_as": elementwiseBlock,
	"gather_rows_f32": 256, "gather_rows_bf16": 256, "gather_rows_as": 256, "kv_write_f32": 256, "kv_write_bf16": 256, // warpRound(…, 256)
	"scatter_rows_f32": 256, "scatter_rows_bf16": 256, "copy_columns_f32": 256, "copy_columns_as": 256, // warpRound(…, 256)
	"rmsnorm_f32": rowBlock, "rmsnorm_wbf16": rowBlock,
	"rmsnorm_backward_f32": rowBlock, "rmsnorm_backward_wbf16": rowBlock,
	"rmsnorm_backward_f32_dybf16": rowBlock, "rmsnorm_backward_wbf16_dybf16": rowBlock,
	"sum_squares_partial_f32": sumSquaresBlock, "sum_squares_finish_f32": sumSquaresMaxBlocks,
	"attention_f32": attentionBlock, "attention_bf16": attentionBlock,
	"attention_backward_f32": attentionBackwardBlock,
	"log_softmax_gather_f32": logSoftmaxMaxBlock, "log_softmax_gather_backward_f32": logSoftmaxMaxBlock,
	"log_softmax_gather_backward_bf16": logSoftmaxMaxBlock,
	"add_i32":                          decodeBlock, "pcg_draw_f64": decodeBlock,
	"sample_f32":      sampleMaxBlock,
	"add_rmsnorm_f32": rowBlock, "add_rmsnorm_wbf16": rowBlock,
	"add_rmsnorm_f32_rbf16": rowBlock, "add_rmsnorm_wbf16_rbf16": rowBlock,
	"swiglu_rows_f32": elementwiseBlock, "swiglu_rows_bf16": elementwiseBlock,
	"swiglu_rows_backward_f32": elementwiseBlock, "swiglu_rows_backward_f32_dbf16": elementwiseBlock,
	"swiglu_rows_backward_f32_dybf16": elementwiseBlock, "swiglu_rows_backward_f32_gubf16": elementwiseBlock,
	"swiglu_rows_backward_f32_dbf16_dybf16": elementwiseBlock, "swiglu_rows_backward_f32_dbf16_gubf16": elementwiseBlock,
	"swiglu_rows_backward_f32_dybf16_gubf16": elementwiseBlock, "swiglu_rows_backward_f32_dbf16_dybf16_gubf16": elementwiseBlock,
	"attention_inputs_f32": attentionInputsBlock, "attention_inputs_wbf16": attentionInputsBlock,
	"attention_inputs_f32_kvbf16": attentionInputsBlock, "attention_inputs_wbf16_kvbf16": attentionInputsBlock,
	"attention_inputs_f32_kvbf16_qbf16": attentionInputsBlock, "attention_inputs_wbf16_kvbf16_qbf16": attentionInputsBlock,
	"attention_inputs_backward_f32": attentionInputsBlock, "attention_inputs_backward_wbf16": attentionInputsBlock,
	"lora_shrink_f32": loraBlock, "lora_expand_f32": loraBlock,
	"lora_expand_backward_f32": loraBlock, "lora_shrink_backward_f32": loraBlock,
	"lora_expand_f32_ybf16": loraBlock, "lora_expand_backward_f32_ybf16": loraBlock, "lora_shrink_backward_f32_dxbf16": loraBlock,
	"lora_shrink_tc_xbf16": tcThreads, "lora_shrink_tc_xabf16": tcThreads, "lora_shrink_tc_bf16": tcThreads,
	"lora_expand_tc": tcThreads, "lora_expand_backward_tc": tcThreads, "lora_shrink_backward_tc": tcThreads,
	"lora_expand_tc_ybf16": tcThreads, "lora_expand_backward_tc_ybf16": tcThreads, "lora_shrink_backward_tc_dxbf16": tcThreads,
	"moe_route_f32": elementwiseBlock, "moe_route_backward_f32": elementwiseBlock,
	"moe_route_sigmoid_f32": elementwiseBlock, "moe_route_sigmoid_backward_f32": elementwiseBlock,
	"moe_count_i32": 256, "moe_place_i32": 256, // block scans of 256
	"grouped_matmul_f32": 256, "grouped_matmul_tn_f32": 256, // 16 × 16 threads of 4 × 4 outputs
	"grouped_matmul_f32_abf16": 256, "grouped_matmul_f32_cbf16": 256, "grouped_matmul_f32_abf16_cbf16": 256,
	"grouped_matmul_tn_f32_abf16": 256, "grouped_matmul_tn_f32_bbf16": 256, "grouped_matmul_tn_f32_abf16_bbf16": 256,
	"grouped_matmul_tc_bf16": tcThreads, "grouped_matmul_tc_bf16_abf16": tcThreads,
	"grouped_matmul_tc_bf16_cbf16": tcThreads, "grouped_matmul_tc_bf16_abf16_cbf16": tcThreads,
	"grouped_matmul_tc_mxfp4": tcThreads, "grouped_matmul_tc_mxfp4_abf16": tcThreads,
	"grouped_matmul_tc_mxfp4_cbf16": tcThreads, "grouped_matmul_tc_mxfp4_abf16_cbf16": tcThreads,
	"moe_combine_f32": 256, "moe_combine_backward_f32": 256, // warpRound(…, 256)
	"moe_combine_as": 256, "moe_combine_backward_as": 256, // warpRound(…, 256)
	"clamped_swiglu_f32": elementwiseBlock, "clamped_swiglu_backward_f32": elementwiseBlock,
	"clamped_swiglu_as": elementwiseBlock, "clamped_swiglu_backward_as": elementwiseBlock,
	"grouped_add_bias_f32": 256, "grouped_add_bias_ybf16": 256, // warpRound(…, 256)
	"causal_conv1d_f32": 256, "causal_conv1d_wbf16": 256, // warpRound(…, 256)
	"causal_conv1d_backward_f32": 256, "causal_conv1d_backward_wbf16": 256,
	"causal_conv1d_as": 256, "causal_conv1d_wbf16_as": 256,
	"causal_conv1d_backward_as": 256, "causal_conv1d_backward_wbf16_as": 256,
	"delta_gates_f32": elementwiseBlock, "delta_gates_wbf16": elementwiseBlock,
	"delta_gates_backward_f32": elementwiseBlock, "delta_gates_backward_wbf16": elementwiseBlock,
	"gated_rmsnorm_f32": rowBlock, "gated_rmsnorm_wbf16": rowBlock,
	"gated_rmsnorm_backward_f32": rowBlock, "gated_rmsnorm_backward_wbf16": rowBlock,
	"gated_rmsnorm_as": rowBlock, "gated_rmsnorm_wbf16_as": rowBlock,
	"gated_rmsnorm_backward_as": rowBlock, "gated_rmsnorm_backward_wbf16_as": rowBlock,
	"gated_delta_step_f32": deltaStepBlock, "gated_delta_chunked_f32": deltaBlock,
	"gated_delta_chunked_backward_f32": deltaBlock, "gated_delta_l2_backward_f32": deltaStepBlock,
	"gated_delta_step_as": deltaStepBlock, "gated_delta_chunked_as": deltaBlock,
	"gated_delta_chunked_backward_as": deltaBlock, "gated_delta_l2_backward_as": deltaStepBlock,
	"ssd_scan_f32": ssdMaxState, "ssd_scan_backward_f32": ssdMaxState, // warpRound(stateSize, ssdMaxState)
	"ssd_chunked_f32": ssdBlock, "ssd_chunked_backward_f32": ssdBlock,
	"ssd_group_sum_f32": ssdSumBlock, "ssd_init_sum_f32": ssdSumBlock, "ssd_group_sum_as": ssdSumBlock,
	"ssd_scan_as": ssdMaxState, "ssd_scan_backward_as": ssdMaxState, "ssd_chunked_as": ssdBlock, "ssd_chunked_backward_as": ssdBlock,
	"grouped_gated_rmsnorm_f32": rowBlock, "grouped_gated_rmsnorm_wbf16": rowBlock,
	"grouped_gated_rmsnorm_backward_f32": rowBlock, "grouped_gated_rmsnorm_backward_wbf16": rowBlock,
	"grouped_gated_rmsnorm_as": rowBlock, "grouped_gated_rmsnorm_wbf16_as": rowBlock,
	"grouped_gated_rmsnorm_backward_as": rowBlock, "grouped_gated_rmsnorm_backward_wbf16_as": rowBlock,
	"relu2_f32": elementwiseBlock, "relu2_backward_f32": elementwiseBlock,
	"relu2_as": elementwiseBlock, "relu2_backward_as": elementwiseBlock,
}

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

// bf16Mask is the flag word of a kernel whose operands each take f32 or
// bf16 (common.cuh's ld_as, st_as; the attention_inputs kernels'
// act_bf16): bit i set when xs[i] is BF16 (an absent operand is not).
func bf16Mask(xs ...*buffer) int32 {
	var m int32
	for i, x := range xs {
		if x.dt == kernels.BF16 {
			m |= 1 << i
		}
	}
	return m
}
