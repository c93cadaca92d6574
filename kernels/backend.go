// Package kernels owns Backend: the buffers and every numeric op that grpo
// runs. Layers above it (model, lora, sampler, trainer) never touch memory or
// loops directly; they describe work as calls on a Backend, so the same model
// code runs on the CPU reference (kernels/cpu), on CUDA (kernels/cuda) and on
// the CUDA emulator (kernels/emu). kernels/kerneltest holds the one
// conformance suite every implementation must pass.
//
// Conventions shared by every op:
//   - Matrices are row-major. A "row" is the innermost contiguous run.
//   - Shapes are passed explicitly; an op reads exactly the elements the shape
//     names and never writes outside its output range, so views (Slice) of a
//     larger buffer are safe operands.
//   - Index operands (token ids, sequences, positions, block tables) are
//     I32 buffers.
//   - Read-only weight operands (MatMul's B, GatherRows' table, RMSNorm's w,
//     AddBias' bias) may be BF16; everything an op writes is F32, except
//     Sample's token ids (I32), a BF16 KV cache (KVWrite, AttentionInputs),
//     attention's BF16 q beside one (AttentionInputs: BF16AttentionHeadDim),
//     the bf16 casts the fused ops write for the next GEMM (FusedOps), and
//     the bf16 activations between ops of a bf16 model's training trace
//     and forwards, where an op's doc allows them (MatMul's C beside a
//     BF16 B, the LoRA ops' Y and dx, the grouped GEMMs' A and C,
//     GroupedMatMulTN's A and B, the fused ops' inputs and outputs,
//     attention's out and dq, Add's and AddBias' operands, the backwards'
//     gradients for their GEMMs, LogSoftmaxGatherBackward's dlogits, the
//     MoE row ops' and expert activations' operands, LinearOps' and
//     SSMOps' activations and gradients beside F32 states, gates and
//     statistics): an op reads them widened, computes in f32 and rounds
//     to nearest even once, at the store.
//   - Ops are queued: a Backend may run them asynchronously. Sync waits for
//     all queued work and returns the first error since the previous Sync.
//     Shape mistakes are programming errors and panic with a message naming
//     the op; they never reach a user whose input was validated.
package kernels

import "fmt"

// DType is the element type of a Buffer.
type DType uint8

const (
	// F32 is IEEE float32: activations, LoRA parameters, optimiser state.
	F32 DType = iota
	// BF16 is bfloat16, used for frozen base weights on GPUs. Backends that
	// compute in f32 only (cpu) may widen BF16 buffers at upload time.
	BF16
	// I32 holds token ids, positions, cache slots and other indices.
	I32
	// U8 is raw bytes: MXFP4 expert weights' codes and scales (MXFP4),
	// uploaded as they are (UploadU8) and read only by the ops that
	// decode them.
	U8
)

func (d DType) String() string {
	switch d {
	case F32:
		return "f32"
	case BF16:
		return "bf16"
	case I32:
		return "i32"
	case U8:
		return "u8"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Size is the bytes of one element.
func (d DType) Size() int {
	switch d {
	case F32, I32:
		return 4
	case BF16:
		return 2
	case U8:
		return 1
	}
	panic(fmt.Sprintf("kernels: unknown dtype %v", d))
}

// Buffer is memory owned by a Backend. Its contents are only reachable
// through the Backend that allocated it.
type Buffer interface {
	// Len is the number of elements.
	Len() int
	DType() DType
	// Slice returns a view of n elements starting at element off. Views share
	// memory with their parent and must not outlive it.
	Slice(off, n int) Buffer
}

// Backend is the one interface every numeric op goes through.
type Backend interface {
	// Name identifies the implementation ("cpu", "cuda", "emu").
	Name() string
	Describer

	// Alloc returns a zeroed buffer of n elements.
	Alloc(dt DType, n int) Buffer
	// Free releases a buffer allocated by this backend (not a view).
	Free(b Buffer)
	// Upload copies host f32 values into an F32 or BF16 buffer (rounding to
	// nearest-even for BF16). len(src) must equal dst.Len().
	Upload(dst Buffer, src []float32)
	// UploadBF16 copies raw bfloat16 bit patterns into a BF16 or F32 buffer.
	UploadBF16(dst Buffer, src []uint16)
	// UploadI32 copies host int32 values into an I32 buffer.
	UploadI32(dst Buffer, src []int32)
	// UploadU8 copies host bytes into a U8 buffer.
	UploadU8(dst Buffer, src []byte)
	// Download copies an F32 or BF16 buffer into host memory as f32.
	Download(dst []float32, src Buffer)
	// DownloadI32 copies an I32 buffer into host memory.
	DownloadI32(dst []int32, src Buffer)
	// Copy copies src into dst; both have the same length and dtype.
	Copy(dst, src Buffer)
	// Sync waits for all queued work and returns the first error raised since
	// the previous Sync (for example a failed kernel launch).
	Sync() error

	Ops
	TrainOps
	SampleOps
	DecodeOps
	MoEOps
	LinearOps
	SSMOps
	ReLU2Ops
}

// Ops are the numeric operations. Each is documented by the plain-loop
// reference in kernels/kerneltest, which is the specification every backend
// is tested against.
type Ops interface {
	FusedOps
	LoRAOps

	// MatMul computes C = alpha·op(A)·op(B) + beta·C with op(A) m×k and op(B)
	// k×n. op(X) is X or Xᵀ per transA/transB; A is m×k (k×m when transposed),
	// B is k×n (n×k when transposed). B may be BF16; a backend may then
	// round A to bf16 before the product (a bf16×bf16 GEMM with f32
	// accumulation, as the CUDA backend's cublasGemmEx and a bf16 PyTorch
	// matmul do); the CPU backend keeps A in f32. A may be BF16 (a bf16
	// layer's activations, a FusedOps cast): it is used as it is, its
	// values exact in f32, so with an F32 B (weights a checkpoint ships in
	// f32) the product is an f32 one. C may be BF16: the product is summed
	// in f32 as with an F32 C, then alpha·sum + beta·C (C widened to f32)
	// is rounded to nearest-even once at the store. With beta == 0, C is
	// overwritten even if it held NaN.
	MatMul(c, a, b Buffer, m, n, k int, transA, transB bool, alpha, beta float32)

	// GatherRows copies rows idx[i] of table (rows × cols) into row i of out,
	// for i < n. It is the embedding lookup and the logits-row selection.
	// table may be BF16 (weights) and out BF16 (a bf16 activation's rows:
	// MoE's tokens to their experts): each value is rounded once at the
	// store, so a BF16 table into a BF16 out is an exact copy.
	GatherRows(out, table, idx Buffer, n, cols int)

	// CopyColumns copies a rows × width block: columns [srcOff,
	// srcOff+width) of src (rows × srcCols) into columns [dstOff,
	// dstOff+width) of dst (rows × dstCols); dst's other columns keep their
	// values. It splits the output of a fused projection (q/k/v, gate/up:
	// one GEMM over weights concatenated at load) into the parts the next
	// ops read, and joins the parts' gradients for the backward GEMM.
	// dst and src may each be BF16: BF16 to BF16 copies exactly, F32 to
	// BF16 rounds once, BF16 to F32 widens.
	CopyColumns(dst, src Buffer, rows, width, dstCols, dstOff, srcCols, srcOff int)

	// RMSNorm computes out[r] = x[r] / sqrt(mean(x[r]²) + eps) · w for each of
	// rows rows of width dim. If rstd is not nil it receives the per-row
	// 1/sqrt(mean(x²)+eps), which the backward pass reuses. out may alias x.
	RMSNorm(out, rstd, x, w Buffer, rows, dim int, eps float32)

	// RoPE rotates x (nTok × nHead × headDim) in place with the rotate-half
	// convention of HF Llama/Qwen: for i < headDim/2, the pair (x[i],
	// x[i+headDim/2]) is rotated by angle pos[t]·invFreq[i]. invFreq has
	// headDim/2 entries (llama3 scaling is folded into it by the caller).
	// With inverse set it rotates by the negative angle, which is RoPE's
	// backward. The angle is the float32 product pos·invFreq, as HF
	// transformers computes it (at position ~30k it is ~1e-3 rad from the
	// exact product; matching HF matters more than exactness).
	RoPE(x, pos, invFreq Buffer, nTok, nHead, headDim int, inverse bool)

	// AddBias adds bias (cols) to every row of x (rows × cols) in place.
	// x and bias may each be F32 or BF16; the sum is f32, stored rounded
	// once when x is BF16.
	AddBias(x, bias Buffer, rows, cols int)

	// Add computes out = a + b elementwise over n elements; out may alias a
	// or b. Each of out, a and b may be F32 or BF16: a and b are read
	// widened and summed in f32, and a BF16 out holds the sum rounded once
	// (the residual add of a bf16 block output: out and a F32, b BF16).
	Add(out, a, b Buffer, n int)

	// SwiGLU computes out = silu(gate) · up elementwise, silu(g) = g·σ(g);
	// out may alias gate or up (of its dtype). Each of out, gate and up
	// may be F32 or BF16 (read widened, computed in f32, a BF16 out
	// rounded once).
	SwiGLU(out, gate, up Buffer, n int)

	// SigmoidGate computes out = x·σ(gate) elementwise, σ(g) = 1/(1+e^−g):
	// the output gate of Qwen3.5's gated attention, applied to the
	// attention output before o_proj. out may alias x or gate. Each of
	// out, x and gate may be F32 or BF16 on its own (a bf16 input is read
	// widened, a bf16 out gets each f32 product rounded once).
	SigmoidGate(out, x, gate Buffer, n int)

	// KVWrite stores row t of x (nTok × width) at position pos[t] of
	// sequence seq[t] in the paged cache (NumBlocks × BlockSize × width):
	// block pages.Table[seq[t]·MaxBlocks + pos[t]/BlockSize], row
	// pos[t] % BlockSize. Two tokens must not name the same cache row.
	// The cache is F32, or BF16 (Description.KVCache on a GPU), which
	// receives x rounded to nearest even.
	KVWrite(cache, x, seq, pos Buffer, pages KVPages, nTok, width int)

	// Attention is causal grouped-query attention over a paged KV cache
	// (see KVPages). Token t (query row q[t], nHead × headDim) belongs to
	// sequence seq[t] at position pos[t] and attends to positions
	// 0..pos[t] inclusive of that sequence, wherever its block table puts
	// them, so prefill (many tokens per sequence), decode (one token per
	// sequence), packed training batches and sequences sharing prompt
	// blocks are the same call. Query head h reads KV head h / (nHead/nKV).
	// kCache and vCache are NumBlocks × BlockSize × nKV × headDim, both F32
	// or both BF16 (widened to f32 as they are read; all arithmetic is
	// f32). q is F32, or BF16 beside BF16 caches at a head dim
	// BF16AttentionHeadDim allows (a bf16 model's training trace; a GPU
	// runs its tensor-core kernels then, which also round the
	// probabilities to bf16 for P·V). out is nTok × nHead × headDim, F32,
	// or BF16 beside a BF16 q (a bf16 model's activation between ops:
	// each output computed in f32 and rounded once as it is stored; the
	// paths an f32 q takes — f32 flash, split-KV decode, scalar — refuse a
	// BF16 out, panicking with the op's name). If lse is not nil it receives the
	// log-sum-exp of the scaled scores per (token, head), nTok × nHead,
	// which the backward pass uses to recompute probabilities. Cache rows
	// past a sequence's largest queried position, and blocks no queried
	// position maps to, may hold garbage (even NaN) and must not be read.
	Attention(out, lse, q, kCache, vCache, seq, pos Buffer, pages KVPages, nTok, nHead, nKV, headDim int, scale float32, variant AttentionVariant)

	// LogSoftmaxGather computes, for each of rows rows of logits (rows ×
	// vocab), logp[r] = log_softmax(logits[r])[target[r]]. If entropy is not
	// nil it receives the entropy of each row's distribution.
	LogSoftmaxGather(logp, entropy, logits, target Buffer, rows, vocab int)
}
