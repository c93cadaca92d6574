//go:build cgo

package cpu

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

// The CBLAS prototypes, declared here so no -dev headers are needed. CBLAS
// enums are passed as int (same ABI): RowMajor 101, NoTrans 111, Trans 112.
typedef void (*grpo_sgemm_fn)(int order, int transA, int transB, int m, int n, int k,
	float alpha, const float *a, int lda, const float *b, int ldb,
	float beta, float *c, int ldc);
typedef void (*grpo_set_threads_fn)(int n);

static grpo_sgemm_fn grpo_sgemm_ptr;

// grpo_blas_open tries each library name in turn; it returns the index of
// the one that provided cblas_sgemm, or -1.
static int grpo_blas_open(const char **names, int count) {
	for (int i = 0; i < count; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (h == NULL) continue;
		grpo_sgemm_fn f = (grpo_sgemm_fn)dlsym(h, "cblas_sgemm");
		if (f == NULL) { dlclose(h); continue; }
		// Single-threaded: the Go side splits work across goroutines.
		grpo_set_threads_fn st = (grpo_set_threads_fn)dlsym(h, "openblas_set_num_threads");
		if (st != NULL) st(1);
		grpo_sgemm_ptr = f;
		return i;
	}
	return -1;
}

static void grpo_sgemm(int tA, int tB, int m, int n, int k, float alpha,
	const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc) {
	grpo_sgemm_ptr(101, tA ? 112 : 111, tB ? 112 : 111, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
*/
import "C"

import (
	"errors"
	"sync"
	"unsafe"
)

// blasLibraries are tried in order: Debian's libopenblas0-pthread provides
// the first; a reference libblas.so.3 may lack cblas_sgemm and is skipped.
var blasLibraries = []string{"libopenblas.so.0", "libopenblas.so", "libblas.so.3"}

var openBLAS struct {
	once sync.Once
	name string
	err  error
}

// loadOpenBLAS dlopens the first library providing cblas_sgemm, once.
func loadOpenBLAS() (sgemm, error) {
	openBLAS.once.Do(func() {
		names := make([]*C.char, len(blasLibraries))
		for i, n := range blasLibraries {
			names[i] = C.CString(n)
			defer C.free(unsafe.Pointer(names[i]))
		}
		i := C.grpo_blas_open(&names[0], C.int(len(names)))
		if i < 0 {
			openBLAS.err = errors.New("no cblas_sgemm in libopenblas.so.0, libopenblas.so or libblas.so.3 (install libopenblas0-pthread)")
			return
		}
		openBLAS.name = blasLibraries[i]
	})
	if openBLAS.err != nil {
		return nil, openBLAS.err
	}
	return cblasSgemm, nil
}

func cblasSgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	C.grpo_sgemm(cbool(tA), cbool(tB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		(*C.float)(unsafe.Pointer(&a[0])), C.int(lda), (*C.float)(unsafe.Pointer(&b[0])), C.int(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.int(ldc))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
