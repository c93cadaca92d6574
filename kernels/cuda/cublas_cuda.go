//go:build cuda

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

// cuBLAS is opened at run time rather than linked, so one binary built
// against this machine's toolkit runs where only another major version's
// libcublas is installed (the lent GPU machines have CUDA 13, in pip
// wheels): libfind.go lists where to look, loadCublas tries each. The entry
// points below have had the same C ABI since CUDA 11 (cublasGemmEx's last
// two parameters became cublasComputeType_t there; enums are ints).
typedef int (*grpo_cublasCreate_t)(void**);
typedef int (*grpo_cublasDestroy_t)(void*);
typedef int (*grpo_cublasSetStream_t)(void*, void*);
typedef int (*grpo_cublasSgemm_t)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
				  const float*, float*, int);
typedef int (*grpo_cublasGemmEx_t)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
				   const void*, void*, int, int, int, int);

static void* grpo_blas_lib;
static grpo_cublasCreate_t grpo_cublasCreate;
static grpo_cublasDestroy_t grpo_cublasDestroy;
static grpo_cublasSetStream_t grpo_cublasSetStream;
static grpo_cublasSgemm_t grpo_cublasSgemm;
static grpo_cublasGemmEx_t grpo_cublasGemmEx;

// grpo_dlopen opens path (global: a cublasLt preloaded this way satisfies
// the cuBLAS opened next) and returns 0, or dlerror()'s text.
static const char* grpo_dlopen(const char* path, int global, void** handle) {
	*handle = dlopen(path, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
	return *handle ? 0 : dlerror();
}
static const char* grpo_blas_bind(void* lib) {
	grpo_blas_lib = lib;
	grpo_cublasCreate = (grpo_cublasCreate_t)dlsym(grpo_blas_lib, "cublasCreate_v2");
	grpo_cublasDestroy = (grpo_cublasDestroy_t)dlsym(grpo_blas_lib, "cublasDestroy_v2");
	grpo_cublasSetStream = (grpo_cublasSetStream_t)dlsym(grpo_blas_lib, "cublasSetStream_v2");
	grpo_cublasSgemm = (grpo_cublasSgemm_t)dlsym(grpo_blas_lib, "cublasSgemm_v2");
	grpo_cublasGemmEx = (grpo_cublasGemmEx_t)dlsym(grpo_blas_lib, "cublasGemmEx");
	if (!grpo_cublasCreate || !grpo_cublasDestroy || !grpo_cublasSetStream || !grpo_cublasSgemm || !grpo_cublasGemmEx) {
		grpo_blas_lib = 0;
		return "lacks cublasCreate_v2/cublasSetStream_v2/cublasSgemm_v2/cublasGemmEx";
	}
	return 0;
}
static int grpo_blas_create(void** h) { return grpo_cublasCreate(h); }
static int grpo_blas_destroy(void* h) { return grpo_cublasDestroy(h); }
static int grpo_blas_set_stream(void* h, void* s) { return grpo_cublasSetStream(h, s); }
// Device addresses arrive as integers: they are not Go or host pointers.
static int grpo_blas_sgemm(void* h, int ta, int tb, int m, int n, int k, float alpha, unsigned long long A, int lda,
			   unsigned long long B, int ldb, float beta, unsigned long long C, int ldc) {
	return grpo_cublasSgemm(h, ta, tb, m, n, k, &alpha, (const float*)A, lda, (const float*)B, ldb, &beta, (float*)C, ldc);
}
// The enum values of library_types.h and cublas_api.h (unchanged from CUDA
// 11 to 13): written out so the binding does not depend on which headers
// built it.
enum {
	GRPO_CUDA_R_32F = 0,
	GRPO_CUDA_R_16BF = 14,
	GRPO_CUBLAS_COMPUTE_32F = 68,
	GRPO_CUBLAS_GEMM_DEFAULT = -1,
};
// A and B bf16, C f32, f32 compute (alpha and beta are then f32, read from
// the host: the handle's default pointer mode).
static int grpo_blas_gemm_bf16(void* h, int ta, int tb, int m, int n, int k, float alpha, unsigned long long A, int lda,
			       unsigned long long B, int ldb, float beta, unsigned long long C, int ldc) {
	return grpo_cublasGemmEx(h, ta, tb, m, n, k, &alpha, (const void*)A, GRPO_CUDA_R_16BF, lda, (const void*)B, GRPO_CUDA_R_16BF,
				 ldb, &beta, (void*)C, GRPO_CUDA_R_32F, ldc, GRPO_CUBLAS_COMPUTE_32F, GRPO_CUBLAS_GEMM_DEFAULT);
}
// The same with C bf16: cuBLAS sums in f32 and rounds alpha·sum + beta·C
// to bf16 at the store (beta reads C widened).
static int grpo_blas_gemm_bf16c(void* h, int ta, int tb, int m, int n, int k, float alpha, unsigned long long A, int lda,
				unsigned long long B, int ldb, float beta, unsigned long long C, int ldc) {
	return grpo_cublasGemmEx(h, ta, tb, m, n, k, &alpha, (const void*)A, GRPO_CUDA_R_16BF, lda, (const void*)B, GRPO_CUDA_R_16BF,
				 ldb, &beta, (void*)C, GRPO_CUDA_R_16BF, ldc, GRPO_CUBLAS_COMPUTE_32F, GRPO_CUBLAS_GEMM_DEFAULT);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// cublas is a cuBLAS handle bound to the device's stream.
type cublas struct{ h unsafe.Pointer }

// cublasPath is the library openCublas loaded (for the GPU check's log).
var cublasPath string

// CublasPath returns the cuBLAS library the backend loaded, "" before the
// first device was opened.
func CublasPath() string { return cublasPath }

// loadCublas finds cuBLAS (libCandidates: GRPO_CUBLAS, LD_LIBRARY_PATH, the
// loader cache, the toolkit and pip-wheel directories, the bare sonames)
// and binds its entry points; once per process.
func loadCublas() error {
	if cublasPath != "" {
		return nil
	}
	search := osLibSearch()
	path, err := openFirst("cuBLAS ("+strings.Join(cublasNames, ", ")+"; set GRPO_CUBLAS to its file or directory)",
		search.libCandidates("GRPO_CUBLAS", cublasNames), func(p string) error {
			// cublasLt first, from the same place, where it exists.
			if lt := cublasLtFor(p); lt != p && (!strings.Contains(p, "/") || search.stat(lt)) {
				var h unsafe.Pointer
				cs := C.CString(lt)
				msg := C.grpo_dlopen(cs, 1, &h)
				C.free(unsafe.Pointer(cs))
				if msg != nil && strings.Contains(p, "/") {
					return errors.New("its cublasLt " + lt + ": " + C.GoString(msg))
				}
			}
			var h unsafe.Pointer
			cs := C.CString(p)
			defer C.free(unsafe.Pointer(cs))
			if msg := C.grpo_dlopen(cs, 0, &h); msg != nil {
				return errors.New(C.GoString(msg))
			}
			if msg := C.grpo_blas_bind(h); msg != nil {
				C.dlclose(h)
				return errors.New(C.GoString(msg))
			}
			return nil
		})
	if err != nil {
		return err
	}
	cublasPath = path
	return nil
}

func openCublas(stream unsafe.Pointer) (*cublas, error) {
	if err := loadCublas(); err != nil {
		return nil, err
	}
	var h unsafe.Pointer
	if st := C.grpo_blas_create(&h); st != 0 {
		return nil, fmt.Errorf("cuda: cublasCreate: %s", cublasStatus(int(st)))
	}
	if st := C.grpo_blas_set_stream(h, stream); st != 0 {
		C.grpo_blas_destroy(h)
		return nil, fmt.Errorf("cuda: cublasSetStream: %s", cublasStatus(int(st)))
	}
	return &cublas{h: h}, nil
}

func (b *cublas) close() error {
	if st := C.grpo_blas_destroy(b.h); st != 0 {
		return fmt.Errorf("cuda: cublasDestroy: %s", cublasStatus(int(st)))
	}
	return nil
}

// sgemm is cublasSgemm (CUBLAS_OP_N = 0, CUBLAS_OP_T = 1). Its default math
// mode computes in full f32 (no TF32), which the conformance tolerance of
// MatMul assumes.
func (b *cublas) sgemm(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, bm DevicePtr, ldb int, beta float32, c DevicePtr, ldc int) error {
	st := C.grpo_blas_sgemm(b.h, op(transA), op(transB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		C.ulonglong(a), C.int(lda), C.ulonglong(bm), C.int(ldb), C.float(beta), C.ulonglong(c), C.int(ldc))
	if st != 0 {
		return fmt.Errorf("cuda: cublasSgemm(m=%d n=%d k=%d): %s", m, n, k, cublasStatus(int(st)))
	}
	return nil
}

// gemmBF16 is cublasGemmEx(A, B: CUDA_R_16BF; C: CUDA_R_32F;
// CUBLAS_COMPUTE_32F; CUBLAS_GEMM_DEFAULT). With bf16 inputs the f32
// compute type lets cuBLAS use the tensor cores (bf16 products, f32 sums)
// on sm_80 and newer; no math-mode setting is involved.
func (b *cublas) gemmBF16(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, bm DevicePtr, ldb int, beta float32, c DevicePtr, ldc int) error {
	st := C.grpo_blas_gemm_bf16(b.h, op(transA), op(transB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		C.ulonglong(a), C.int(lda), C.ulonglong(bm), C.int(ldb), C.float(beta), C.ulonglong(c), C.int(ldc))
	if st != 0 {
		return fmt.Errorf("cuda: cublasGemmEx bf16×bf16→f32 (m=%d n=%d k=%d lda=%d ldb=%d ldc=%d): %s", m, n, k, lda, ldb, ldc, cublasStatus(int(st)))
	}
	return nil
}

// gemmBF16C is gemmBF16 with C of CUDA_R_16BF (a bf16 activation between
// ops): the same f32 sums, rounded to bf16 at the store.
func (b *cublas) gemmBF16C(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, bm DevicePtr, ldb int, beta float32, c DevicePtr, ldc int) error {
	st := C.grpo_blas_gemm_bf16c(b.h, op(transA), op(transB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		C.ulonglong(a), C.int(lda), C.ulonglong(bm), C.int(ldb), C.float(beta), C.ulonglong(c), C.int(ldc))
	if st != 0 {
		return fmt.Errorf("cuda: cublasGemmEx bf16×bf16→bf16 (m=%d n=%d k=%d lda=%d ldb=%d ldc=%d): %s", m, n, k, lda, ldb, ldc, cublasStatus(int(st)))
	}
	return nil
}

// op is cublasOperation_t: CUBLAS_OP_N = 0, CUBLAS_OP_T = 1.
func op(t bool) C.int {
	if t {
		return 1
	}
	return 0
}
