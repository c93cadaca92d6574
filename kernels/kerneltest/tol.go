package kerneltest

// Tolerances per op, against the float64 reference. A correct float32
// implementation lands one to three orders of magnitude inside each (the
// CPU backend's worst case over the suite is noted as NMSE / max-abs
// relative to scale); an implementation that drops a term, reads a
// neighbouring element or loses precision catastrophically lands many
// orders outside. Ops that only move data must be bit-exact.
var (
	// Data movement (GatherRows, KVWrite, Copy): bit-exact.
	tolExact = Tol{}
	// One rounding per element (Add, AddBias): |err| ≤ 2⁻²⁴·|want|.
	// cpu: 7.7e-16 / 3.2e-8.
	tolRounded = Tol{NMSE: 1e-14, MaxAbs: 1.2e-7}
	// A handful of float32 operations per element (SwiGLU, RoPE).
	// cpu: 1.2e-15 / 6.0e-8.
	tolElementwise = Tol{NMSE: 1e-13, MaxAbs: 1e-6}
	// Row reductions of up to 151936 terms (RMSNorm, LogSoftmaxGather).
	// cpu: 2.9e-15 / 5.4e-8.
	tolReduction = Tol{NMSE: 1e-12, MaxAbs: 1e-6}
	// Dot products of up to 300 float32 products (MatMul, Attention).
	// cpu: 1.9e-13 / 7.8e-7.
	tolMatMul = Tol{NMSE: 1e-11, MaxAbs: 1e-5}
)

// tolMatMulBF16 bounds MatMul with a BF16 B against the reference whose A
// is rounded to bf16 too, the choice a backend may make for a bf16×bf16
// GEMM (kernels/cuda: cublasGemmEx; the CPU backend keeps A in f32 and
// meets tolMatMul against the f32-A reference instead). bf16×bf16
// products are exact in f32, so only the f32 summation differs — but
// tensor cores align addends by truncation (Fasi et al., "Numerical
// behavior of NVIDIA tensor cores", 2021), up to about (k/16)·2⁻²³ of
// Σ|a·b| where round-to-nearest sums stay near √k·2⁻²⁴, so this bound is
// 100× (NMSE) and 10× (max-abs) looser than tolMatMul. It stays 3 orders of magnitude below what
// it must resolve: rounding A to bf16 (u = 2⁻⁸) moves the result by NMSE
// ~2e-6 (u²/6 for uniform inputs), max-abs ~2e-3 of scale, and up to NMSE
// 1.2e-3 where β·C cancels α·A·B (the 1×1×1 cases) — which is why no
// NMSE bound near u² = 2⁻¹⁶ against the f32-A reference can hold both
// backends. emu (k-order f32 sums): NMSE ≤ 1.2e-14, max-abs ≤ 3.2e-7.
var tolMatMulBF16 = Tol{NMSE: 1e-9, MaxAbs: 1e-4}

// tolAttentionBF16 bounds Attention over BF16 caches against the reference
// on the caches' stored (rounded) values, and AttentionBackward's dq, dk,
// dv likewise. A tensor-core backend (kernels/cuda's wmma path) also rounds
// q and the probabilities (in the backward also dout and dS) to bf16, u =
// 2⁻⁸ relative each, with f32 accumulation, so results move by NMSE of
// order u²/6 ≈ 2.5e-6 and max-abs of a few u of scale — more where a
// score is large (q·k of 200: the large-scores case), because u of a
// score of 200 is a shift of 0.8 in the exponent. Measured under emu:
// forward NMSE ≤ 2.9e-5, max-abs ≤ 1.9e-2 (large-scores; ≤ 1.5e-3
// elsewhere); backward (dq, the first gradient compared) NMSE ≤ 5.4e-5,
// max-abs ≤ 1.7e-3. The bound leaves ~6× on
// NMSE and stays far below a dropped term or a wrong key (NMSE ≳ 1e-2).
// The CPU backend and the split-KV decode kernel read the rounded caches
// in f32 and land within tolMatMul (NMSE ~1e-14). With q BF16 too
// (kv=bf16,q=bf16: kernels/cuda's mma.sync kernels, attention_flash_tc.cu)
// the reference takes the same rounded q, so only P (and in the backward
// dO and dS) is rounded against it. Measured under emu over those cases:
// forward NMSE ≤ 2.1e-6, max-abs ≤ 1.5e-3 of scale; backward (dq, the
// first gradient compared) NMSE ≤ 5.4e-5, max-abs ≤ 1.2e-3.
var tolAttentionBF16 = Tol{NMSE: 3e-4, MaxAbs: 5e-2}
