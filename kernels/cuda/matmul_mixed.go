package cuda

import "github.com/grpo-dev/grpo/kernels"

// sgemmMixed is MatMul with an F32 B: an f32 GEMM (cublasSgemm), since
// the weights are f32 and rounding them would change the model. A bf16
// A (a bf16 layer's activations beside weights a checkpoint ships in
// f32) is widened into pooled scratch first, exactly; a bf16 C takes
// the f32 result in scratch (C widened there first when beta reads it)
// and is rounded once at the store, as the bf16-output GEMM does. All-f32
// operands are the plain GEMM, no scratch.
func (b *Backend) sgemmMixed(aa, ba, ca *buffer, m, n, k int, transA, transB bool, lda, ldb int, alpha, beta float32) {
	const op = "MatMul"
	ap, cp := aa.ptr, ca.ptr
	if aa.dt == kernels.BF16 {
		tmp, ok := b.convertedCopy(op+"/A widen", "bf16_to_f32", aa.ptr, m*k, 4)
		if !ok {
			return
		}
		defer b.putScratch(tmp, 4*m*k)
		ap = tmp
	}
	if ca.dt == kernels.BF16 {
		tmp, ok := b.scratch(4 * m * n)
		if !ok {
			return
		}
		defer b.putScratch(tmp, 4*m*n)
		b.addTraffic(op+"/C f32", 2*4*m*n) // written by the GEMM, read by the rounding
		if beta != 0 {
			b.addTraffic(op+"/C widen", 2*4*m*n) // written by the widening, read by the GEMM
			b.elementwise("bf16_to_f32", m*n, tmp, ca.ptr, int32(m*n))
		}
		cp = tmp
	}
	b.pending = true
	b.fail(b.dev.Sgemm(transB, transA, n, m, k, alpha, ba.ptr, ldb, ap, lda, beta, cp, n))
	if cp != ca.ptr {
		b.elementwise("f32_to_bf16", m*n, ca.ptr, cp, int32(m*n))
	}
}

// convertedCopy is n elements of src converted by the elementwise kernel
// (f32_to_bf16, bf16_to_f32) into pooled scratch of size bytes an
// element, counted under key as written and read back by the op; the
// caller returns it (putScratch of n·size bytes) after its last use.
func (b *Backend) convertedCopy(key, kernel string, src DevicePtr, n, size int) (DevicePtr, bool) {
	p, ok := b.scratch(size * n)
	if !ok {
		return 0, false
	}
	b.addTraffic(key, 2*size*n)
	b.elementwise(kernel, n, p, src, int32(n))
	return p, true
}
