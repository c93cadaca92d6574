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
