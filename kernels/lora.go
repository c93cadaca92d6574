package kernels

// LoRAPart is one adapted projection inside a LoRA op: its B matrix (Out ×
// Rank, as PEFT stores it) and scale, and where its output lies: columns
// [YOff, YOff+Out) of Y (rows × YCols). In the forward, Y is the base
// GEMM's output, which the expand adds into in place; in the backward it
// is that output's gradient. The part's Rank columns of the op's xa
// (rows × Σ Rank) follow those of the parts before it. DB, when not nil,
// accumulates B's gradient (backward only).
type LoRAPart struct {
	B, DB       Buffer
	Rank, Out   int
	Scale       float32
	Y           Buffer
	YCols, YOff int
}

// LoRAOps are LoRA's two halves, y += Scale·(x·Aᵀ)·Bᵀ, for projections
// that share an input: one shrink over their A matrices stored end to end
// and one expand that adds every part into its base output.
//
// Precision: the parameters A, B (and their gradients) are F32 masters.
// An op whose activation operand is BF16 — x or xa of the shrink, xa of
// the expand and of its backward, x of the shrink's backward — may run as
// a bf16 GEMM with f32 accumulation, rounding the F32 operands to bf16
// (kernels/cuda does, on tensor cores; the CPU backend multiplies in f32);
// with F32 activations every backend multiplies in f32. The outputs the
// ops add into — the parts' Y of the expand, dx of the shrink's backward —
// and the expand backward's dY may be F32 or BF16 whatever the GEMM's
// operands: a BF16 one is read widened to f32, the sum is f32, and the
// result is rounded to bf16 (nearest-even) once, at the store. The parts
// of one call share one Y dtype (a mix panics, naming the op).
type LoRAOps interface {
	// LoRAShrink writes xa = x·Aᵀ (rows × ranks, overwritten; F32, or
	// BF16 rounded from the f32 sums) with A the ranks × in F32 matrix
	// [A_0; A_1; …] of the parts. x (rows × in) is F32 or BF16 (an
	// AddRMSNorm cast); products are accumulated in f32.
	LoRAShrink(xa, x, a Buffer, rows, in, ranks int)

	// LoRAExpand adds, for each part p (its xa columns starting at o_p =
	// Σ ranks of the parts before it), p.Y[r, p.YOff+j] += p.Scale ·
	// Σ_k xa[r, o_p+k] · p.B[j, k]. xa is F32 or BF16; the parts' Y are
	// all F32 or all BF16 (Y[r, j] = round_bf16(Y[r, j] + the f32 sum)).
	// The parts' Y columns must not overlap.
	LoRAExpand(xa Buffer, parts []LoRAPart, rows int)
}

// LoRATrainOps are the backwards of LoRAOps. Together with the base
// weight's input gradient (a MatMul) they are a projection group's whole
// backward: LoRAExpandBackward, then LoRAShrinkBackward.
type LoRATrainOps interface {
	// LoRAExpandBackward writes dxa[r, o_p+k] = p.Scale · Σ_j p.Y[r,
	// p.YOff+j] · p.B[j, k] (rows × Σ ranks, overwritten, F32; p.Y holds
	// the output gradient, all parts' F32 or all BF16) and adds p.Scale ·
	// Σ_r p.Y[r, p.YOff+j] · xa[r, o_p+k] into p.DB[j, k] (F32) where
	// p.DB is not nil; xa is the forward's (F32 or BF16).
	LoRAExpandBackward(dxa, xa Buffer, parts []LoRAPart, rows int)

	// LoRAShrinkBackward adds dxa·A into dx (rows × in, F32 or BF16:
	// dx[r, i] = round_bf16(dx[r, i] + the f32 sum); skipped when dx is
	// nil) and dxaᵀ·x into da (ranks × in, F32; skipped when nil), for the
	// A (ranks × in) and x (rows × in, F32 or BF16) of the forward's
	// LoRAShrink. dxa is F32.
	LoRAShrinkBackward(dx, da, dxa, x, a Buffer, rows, in, ranks int)
}
