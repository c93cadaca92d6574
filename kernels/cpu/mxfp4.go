package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// e2m1 are the values of an MXFP4 code (kernels.MXFP4): sign bit 3, then
// 0, 0.5, 1, 1.5, 2, 3, 4, 6.
var e2m1 = [16]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6, float32(math.Copysign(0, -1)), -0.5, -1, -1.5, -2, -3, -4, -6}

// GroupedMatMulMXFP4 dequantizes B and runs GroupedMatMul over its
// values: the CPU keeps bf16 weights as f32 values, so this is
// GroupedMatMul over the dequantized weights bit for bit.
func (be *Backend) GroupedMatMulMXFP4(c, a kernels.Buffer, b kernels.MXFP4, offsets kernels.Buffer, rows, nExperts, n, k int, transB bool, alpha, beta float32) {
	const op = "GroupedMatMulMXFP4"
	positive(op, nExperts, n, k)
	if (n*k)%32 != 0 || (transB && k%32 != 0) || (!transB && n%32 != 0) {
		panic(fmt.Sprintf("cpu.%s: n %d, k %d: the stored rows are not whole blocks of 32", op, n, k))
	}
	if rows == 0 {
		return
	}
	be.groupedMatMul(op, c, a, DequantMXFP4(op, b, nExperts*n*k), offsets, rows, nExperts, n, k, transB, alpha, beta)
}

// DequantMXFP4 returns the first n values of w: element i is code i
// (the low nibble of byte i/2 when i is even) times 2^(scale[i/32] − 127).
func DequantMXFP4(op string, w kernels.MXFP4, n int) []float32 {
	codes, scales := u8(op, "b.Codes", w.Codes, n/2), u8(op, "b.Scales", w.Scales, n/32)
	out := make([]float32, n)
	for blk, s := range scales {
		sc := float32(math.Ldexp(1, int(s)-127))
		for j, v := range codes[16*blk : 16*blk+16] {
			out[32*blk+2*j] = e2m1[v&0x0f] * sc
			out[32*blk+2*j+1] = e2m1[v>>4] * sc
		}
	}
	return out
}
