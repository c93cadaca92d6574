package cpu

import "github.com/grpo-dev/grpo/kernels"

// MatMul splits C into row blocks (or column blocks when C is short and
// wide) and runs one single-threaded sgemm per block, in parallel. A BF16
// C (f32 storage holding bf16 values, so beta reads it widened exactly)
// receives the f32 result and is then rounded in place: the one rounding
// the GPU's bf16-output GEMM makes at its store. A BF16 A is f32 storage
// too, whatever B's dtype: the product is the same sgemm.
func (be *Backend) MatMul(c, a, b kernels.Buffer, m, n, k int, transA, transB bool, alpha, beta float32) {
	positive("MatMul", m, n, k)
	cs := floats("MatMul", "c", c, m*n)
	as := floats("MatMul", "a", a, m*k)
	bs := floats("MatMul", "b", b, k*n)
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	be.gemm2D(transA, transB, m, n, k, alpha, as, lda, bs, ldb, beta, cs, n)
	if c.DType() == kernels.BF16 {
		be.parallel(m*n, 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				cs[i] = roundBF16(cs[i])
			}
		})
	}
}

// gemmBlock is the granularity of the split: multiples of the micro-kernel
// tile sizes of OpenBLAS (and gonum), so blocks stay efficient.
const gemmBlock = 16

// gemm2D is a parallel sgemm over strided operands: it splits the m rows of
// C across workers, or the n columns when m is too small to share.
func (be *Backend) gemm2D(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	work := 2 * m * n * k
	w := be.workers
	if w <= 1 || work < 4*minParallelWork {
		be.gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if m >= n || m >= w*gemmBlock {
		rows := roundUp((m+w-1)/w, gemmBlock)
		be.parallel((m+rows-1)/rows, work, func(lo, hi int) {
			for blk := lo; blk < hi; blk++ {
				r0 := blk * rows
				r1 := min(r0+rows, m)
				aOff := r0 * lda // row r0 of A, or column r0 of the stored Aᵀ
				if tA {
					aOff = r0
				}
				be.gemm(tA, tB, r1-r0, n, k, alpha, a[aOff:], lda, b, ldb, beta, c[r0*ldc:], ldc)
			}
		})
		return
	}
	cols := roundUp((n+w-1)/w, gemmBlock)
	be.parallel((n+cols-1)/cols, work, func(lo, hi int) {
		for blk := lo; blk < hi; blk++ {
			c0 := blk * cols
			c1 := min(c0+cols, n)
			bOff := c0 // column c0 of B, or row c0 of the stored Bᵀ
			if tB {
				bOff = c0 * ldb
			}
			be.gemm(tA, tB, m, c1-c0, k, alpha, a, lda, b[bOff:], ldb, beta, c[c0:], ldc)
		}
	})
}

func roundUp(x, to int) int { return (x + to - 1) / to * to }
