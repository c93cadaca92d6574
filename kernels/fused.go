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
	// weights, which that MatMul then takes as it is. out may then be nil:
	// only the bf16 copy is stored (out and outBF16 are not both nil). r
	// may be BF16 (the o_proj or down_proj GEMM's bf16 output), read
	// widened to f32; x, sum, out and rstd are F32.
	AddRMSNorm(sum, out, outBF16, rstd, x, r, w Buffer, rows, dim int, eps float32)

	// SwiGLURows computes out = silu(gate) · up (rows × width) where gate
	// and up are the two halves of each row of gateUp (rows × 2·width):
	// the fused gate/up GEMM's output, read in place rather than split
	// first. gateUp may be BF16, read widened to f32. out and outBF16 are
	// as in AddRMSNorm (out may be nil when outBF16 is not).
	SwiGLURows(out, outBF16, gateUp Buffer, rows, width int)

	// AttentionInputs turns the fused q/k/v projection into attention's
	// operands in one pass. Row t of qkv is q | k | v: the q part holds
	// nHead heads of headDim, or, when gate is not nil (the gated
	// attention of Qwen3.5/3.6), nHead heads of 2·headDim, each the
	// query (first headDim) followed by its output gate; then nKV k and
	// nKV v heads of headDim. A row is thus (nHead + 2·nKV)·headDim wide,
	// or (2·nHead + 2·nKV)·headDim with the gate. Per token and head, in
	// this order: the head's part of qBias, kBias or vBias (nil: none) is
	// added (as AddBias; qBias is laid out like the q part of a row, so
	// with the gate it covers the gate halves too); the gate halves, with
	// their bias, go to gate (nTok × nHead × headDim), neither normalised
	// nor rotated, the layout of attention's output that SigmoidGate
	// multiplies; q and k heads are normalised with qNorm, kNorm
	// (headDim each; nil: no q/k norm) as RMSNorm with eps, over the
	// whole head; q and k heads are rotated by RoPE at pos[t] with
	// invFreq, on their first rotaryDim dims only: the pair (i, i +
	// rotaryDim/2) for i < rotaryDim/2, invFreq having rotaryDim/2
	// entries; dims from rotaryDim on pass unrotated (partial rotary;
	// rotaryDim == headDim rotates the whole head). rotaryDim is even and
	// 0 < rotaryDim ≤ headDim. The q heads go to q (nTok × nHead ×
	// headDim: F32, or BF16 beside BF16 caches as Attention takes it,
	// rounded to nearest even); the k and v heads, rows of nKV·headDim,
	// to kCache and vCache at position pos[t] of sequence seq[t], as
	// KVWrite stores them. When not nil, qPre (nTok × nHead × headDim) and kPre (nTok ×
	// nKV × headDim) receive the q and k heads before the norm, and
	// rstdQ (nTok × nHead) and rstdK (nTok × nKV) the norms' 1/rms: what
	// RMSNormBackward needs. qkv is not written. The biases, and the norm
	// weights, share one dtype. qkv, gate, qPre and kPre may each be F32
	// or BF16 (a bf16 model's activations between ops): a BF16 qkv is
	// read widened to f32, and a BF16 gate, qPre or kPre holds the f32
	// value rounded to nearest even once, at the store — the norm and
	// the rotation take the unrounded f32 row, so only what is stored is
	// rounded (and a BF16 qPre or kPre is what the backward then reads).
	// rstdQ and rstdK are F32.
	AttentionInputs(q, gate, qPre, kPre, rstdQ, rstdK, kCache, vCache, qkv, qBias, kBias, vBias, qNorm, kNorm, invFreq, seq, pos Buffer,
		pages KVPages, nTok, nHead, nKV, headDim, rotaryDim int, eps float32)
}

// FusedTrainOps are the backwards of FusedOps that training needs.
type FusedTrainOps interface {
	// SwiGLURowsBackward is SwiGLURows' backward: row r of dGateUp (rows ×
	// 2·width, overwritten) receives dgate in its first half and dup in
	// its second, from dy (rows × width) and the forward's gateUp, with
	// the formulas of SwiGLUBackward. dy, gateUp and dGateUp are each F32
	// or BF16: bf16 operands are read widened to f32, the gradients are
	// formed in f32 and a BF16 dGateUp stores them rounded once
	// (nearest-even): the A operand of the gate/up backward GEMM.
	SwiGLURowsBackward(dGateUp, dy, gateUp Buffer, rows, width int)

	// AttentionInputsBackward is AttentionInputs' backward: it writes
	// dqkv (laid out like qkv, overwritten), the gradient of the fused
	// q/k/v projection, from dq (nTok × nHead × headDim), dgate (nTok ×
	// nHead × headDim, or nil when the forward had no gate) and the
	// caches' gradients dkCache and dvCache (laid out like the caches, as
	// AttentionBackward writes them). Per token: the k and v heads'
	// gradients are read at the token's cache row (position pos[t] of
	// sequence seq[t] through pages); q and k heads are rotated back
	// (RoPE with inverse, on the first rotaryDim dims as the forward)
	// and, with qNorm and kNorm not nil, taken through the norms'
	// backward (RMSNormBackward, with the forward's qPre, kPre, rstdQ and
	// rstdK); v heads and dgate's heads (into the gate halves of the q
	// part) pass as they are. The frozen biases add nothing. dqkv, dq,
	// dgate, qPre and kPre may each be F32 or BF16: BF16 inputs are read
	// widened to f32, and a BF16 dqkv holds each element's f32 gradient
	// rounded to nearest even once, after all of it is computed. rstdQ,
	// rstdK, dkCache and dvCache are F32.
	AttentionInputsBackward(dqkv, dq, dgate, dkCache, dvCache, qPre, kPre, rstdQ, rstdK, qNorm, kNorm, invFreq, seq, pos Buffer, pages KVPages,
		nTok, nHead, nKV, headDim, rotaryDim int)
}
