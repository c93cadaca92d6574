package kernels

// MXFP4 is a stack of matrices in the OCP microscaling FP4 format, as
// gpt-oss publishes its experts: the elements in row-major order cut into
// blocks of 32 consecutive elements, each element an e2m1 code (a nibble:
// sign bit 3, magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6) and each block an
// E8M0 scale byte s, the block's values code·2^(s−127). Codes holds two
// elements a byte, the even element in the low nibble (elements/2
// bytes); Scales a byte per block (elements/32 bytes). A row's length is
// a multiple of 32, so no block spans two rows and a view of whole
// blocks (Slice of both at element offset off: Codes at off/2, Scales at
// off/32) is a valid MXFP4 too. Every value is exact in bf16.
type MXFP4 struct {
	Codes, Scales Buffer // U8
}

// MXFP4Bytes is the device bytes of n MXFP4 elements (n a multiple of 32):
// 4.25 bits each.
func MXFP4Bytes(n int64) int64 { return n/2 + n/32 }

// MXFP4Ops multiply by MXFP4 weights without storing them dequantized.
type MXFP4Ops interface {
	// GroupedMatMulMXFP4 is GroupedMatMul with B in MXFP4: B holds
	// nExperts matrices end to end, each k × n (n × k when transB) of
	// MXFP4 elements, k·n a multiple of 32 and the stored rows' length (k
	// when transB, else n) too. It computes what GroupedMatMul computes
	// over B's values in a BF16 buffer (a backend that rounds A to bf16
	// for bf16 experts rounds it here too), bit for bit where bf16 weights
	// are kept bf16 (the CPU widens them and its GEMM's summation order
	// follows the operands' alignment). A and C may each be F32 or BF16,
	// as GroupedMatMul's.
	GroupedMatMulMXFP4(c, a Buffer, b MXFP4, offsets Buffer, rows, nExperts, n, k int, transB bool, alpha, beta float32)
}
