package emu

/*
#include "runtime.h"
*/
import "C"

import (
	"errors"
	"fmt"

	"github.com/grpo-dev/grpo/kernels/cuda"
)

// The cuBLAS stand-ins. Operand extents are checked (cuBLAS would not), and
// both run after every queued copy, as a GEMM on the stream would.

func (d *Device) Sgemm(transA, transB bool, m, n, k int, alpha float32, a cuda.DevicePtr, lda int, b cuda.DevicePtr, ldb int, beta float32, c cuda.DevicePtr, ldc int) error {
	if m == 0 || n == 0 {
		return nil
	}
	if err := d.checkGemm("Sgemm", 4, 4, transA, transB, m, n, k, a, lda, b, ldb, c, ldc); err != nil {
		return err
	}
	run := func() error {
		d.flush()
		C.emu_gemm(cbool(transA), cbool(transB), C.int(m), C.int(n), C.int(k), C.float(alpha), (*C.float)(ptrOf(a)), C.int(lda),
			(*C.float)(ptrOf(b)), C.int(ldb), C.float(beta), (*C.float)(ptrOf(c)), C.int(ldc))
		return nil
	}
	if d.record(run) {
		return nil
	}
	return run()
}

// GemmBF16 is cublasGemmEx's contract for bf16 A and B with f32 C and
// CUBLAS_COMPUTE_32F: the bf16 values widened exactly, products summed in
// f32 in plain k order (cuBLAS's tensor-core order is not emulated).
func (d *Device) GemmBF16(transA, transB bool, m, n, k int, alpha float32, a cuda.DevicePtr, lda int, b cuda.DevicePtr, ldb int, beta float32, c cuda.DevicePtr, ldc int) error {
	if m == 0 || n == 0 {
		return nil
	}
	if err := d.checkGemm("GemmBF16", 2, 4, transA, transB, m, n, k, a, lda, b, ldb, c, ldc); err != nil {
		return err
	}
	run := func() error {
		d.flush()
		C.emu_gemm_bf16(cbool(transA), cbool(transB), C.int(m), C.int(n), C.int(k), C.float(alpha), (*C.uint16_t)(ptrOf(a)), C.int(lda),
			(*C.uint16_t)(ptrOf(b)), C.int(ldb), C.float(beta), (*C.float)(ptrOf(c)), C.int(ldc))
		return nil
	}
	if d.record(run) {
		return nil
	}
	return run()
}

// GemmBF16C is GemmBF16 with a bf16 C (cublasGemmEx with Ctype
// CUDA_R_16BF): the same sums in the same order, rounded to nearest-even
// at the store; beta reads the stored bf16 widened.
func (d *Device) GemmBF16C(transA, transB bool, m, n, k int, alpha float32, a cuda.DevicePtr, lda int, b cuda.DevicePtr, ldb int, beta float32, c cuda.DevicePtr, ldc int) error {
	if m == 0 || n == 0 {
		return nil
	}
	if err := d.checkGemm("GemmBF16C", 2, 2, transA, transB, m, n, k, a, lda, b, ldb, c, ldc); err != nil {
		return err
	}
	run := func() error {
		d.flush()
		C.emu_gemm_bf16c(cbool(transA), cbool(transB), C.int(m), C.int(n), C.int(k), C.float(alpha), (*C.uint16_t)(ptrOf(a)), C.int(lda),
			(*C.uint16_t)(ptrOf(b)), C.int(ldb), C.float(beta), (*C.uint16_t)(ptrOf(c)), C.int(ldc))
		return nil
	}
	if d.record(run) {
		return nil
	}
	return run()
}

// checkGemm verifies that each column-major operand (A and B of abBytes
// per element, C of cBytes) lies inside one allocation, and that the
// leading dimensions are ones cuBLAS accepts.
func (d *Device) checkGemm(what string, abBytes, cBytes int, transA, transB bool, m, n, k int, a cuda.DevicePtr, lda int, b cuda.DevicePtr, ldb int, c cuda.DevicePtr, ldc int) error {
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	if lda < max(1, ar) || ldb < max(1, br) || ldc < max(1, m) {
		return fmt.Errorf("emu: %s m=%d n=%d k=%d: leading dimensions lda=%d ldb=%d ldc=%d below the rows %d, %d, %d (cuBLAS: CUBLAS_STATUS_INVALID_VALUE)",
			what, m, n, k, lda, ldb, ldc, max(1, ar), max(1, br), max(1, m))
	}
	ext := func(rows, cols, ld, size int) int { return ((cols-1)*ld + rows) * size }
	var errs []error
	if k > 0 {
		errs = append(errs, d.check(what+" A", a, ext(ar, ac, lda, abBytes)), d.check(what+" B", b, ext(br, bc, ldb, abBytes)))
	}
	errs = append(errs, d.check(what+" C", c, ext(m, n, ldc, cBytes)))
	return errors.Join(errs...)
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
