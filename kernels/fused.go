package kernels

// FusedOps do in one pass what the model would otherwise do in several:
// each saves launches (and a round trip of the activations through
// memory) on a GPU, where a decode step is bound by launches and bytes,
// not flops. Each is specified by its plain-loop reference in
// kernels/kerneltest, as every op is.
type FusedOps interface {
	// AddRMSNorm is the residual add and the next RMSNorm in one pass. For
	// each of rows rows of width dim, with s = x + r (rounded to f32), it
	// writes sum = s and out = s / sqrt(mean(s²) + eps) · w, and rstd (if
	// not nil) as RMSNorm does. With r nil there is no add: s = x and sum
	// must be nil. sum may alias x or r; out aliases none of them, except x
	// when there is no add (the head's norm of gathered rows, in place). If
	// outBF16 (a BF16 buffer) is not nil it also receives out rounded to
	// bf16 (nearest-even): the A operand of the next MatMul with BF16
	// weights, which that MatMul then takes as it is.
	AddRMSNorm(sum, out, outBF16, rstd, x, r, w Buffer, rows, dim int, eps float32)

	// SwiGLURows computes out = silu(gate) · up (rows × width) where gate
	// and up are the two halves of each row of gateUp (rows × 2·width):
	// the fused gate/up GEMM's output, read in place rather than split
	// first. outBF16 is as in AddRMSNorm.
	SwiGLURows(out, outBF16, gateUp Buffer, rows, width int)

	// AttentionInputs turns the fused q/k/v projection into attention's
	// operands in one pass. Row t of qkv (nTok × (nHead + 2·nKV)·headDim)
	// is q | k | v, nHead, nKV and nKV heads of headDim. Per token and
	// head, in this order: the head's part of qBias, kBias or vBias
	// (nil: none) is added (as AddBias); q and k heads are normalised with
	// qNorm, kNorm (headDim each; nil: no q/k norm) as RMSNorm with eps;
	// q and k heads are rotated by RoPE at pos[t] with invFreq. The q
	// heads go to q (nTok × nHead × headDim); the k and v heads, rows of
	// nKV·headDim, to kCache and vCache at position pos[t] of sequence
	// seq[t], as KVWrite stores them. When not nil, qPre (nTok × nHead ×
	// headDim) and kPre (nTok × nKV × headDim) receive the q and k heads
	// before the norm, and rstdQ (nTok × nHead) and rstdK (nTok × nKV) the
	// norms' 1/rms: what RMSNormBackward needs. qkv is not written. The
	// biases, and the norm weights, share one dtype.
	AttentionInputs(q, qPre, kPre, rstdQ, rstdK, kCache, vCache, qkv, qBias, kBias, vBias, qNorm, kNorm, invFreq, seq, pos Buffer,
		pages KVPages, nTok, nHead, nKV, headDim int, eps float32)
}

// FusedTrainOps are the backwards of FusedOps that training needs.
type FusedTrainOps interface {
	// SwiGLURowsBackward is SwiGLURows' backward: row r of dGateUp (rows ×
	// 2·width, overwritten) receives dgate in its first half and dup in
	// its second, from dy (rows × width) and the forward's gateUp, with
	// the formulas of SwiGLUBackward.
	SwiGLURowsBackward(dGateUp, dy, gateUp Buffer, rows, width int)

	// AttentionInputsBackward is AttentionInputs' backward: it writes
	// dqkv (nTok × (nHead + 2·nKV)·headDim, laid out like qkv,
	// overwritten), the gradient of the fused q/k/v projection, from dq
	// (nTok × nHead × headDim) and the caches' gradients dkCache and
	// dvCache (laid out like the caches, as AttentionBackward writes
	// them). Per token: the k and v heads' gradients are read at the
	// token's cache row (position pos[t] of sequence seq[t] through
	// pages); q and k heads are rotated back (RoPE with inverse) and,
	// with qNorm and kNorm not nil, taken through the norms' backward
	// (RMSNormBackward, with the forward's qPre, kPre, rstdQ and rstdK);
	// v heads pass as they are. The frozen biases add nothing.
	AttentionInputsBackward(dqkv, dq, dkCache, dvCache, qPre, kPre, rstdQ, rstdK, qNorm, kNorm, invFreq, seq, pos Buffer, pages KVPages,
		nTok, nHead, nKV, headDim int)
}
