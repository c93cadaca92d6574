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
typedef int (*grpo_get_threads_fn)(void);
typedef char *(*grpo_get_string_fn)(void);

static grpo_sgemm_fn grpo_sgemm_ptr;
// OpenBLAS's own reports (NULL in a BLAS without them).
static grpo_get_string_fn grpo_corename_ptr, grpo_config_ptr;
static grpo_get_threads_fn grpo_get_threads_ptr;

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
		grpo_corename_ptr = (grpo_get_string_fn)dlsym(h, "openblas_get_corename");
		grpo_config_ptr = (grpo_get_string_fn)dlsym(h, "openblas_get_config");
		grpo_get_threads_ptr = (grpo_get_threads_fn)dlsym(h, "openblas_get_num_threads");
		grpo_sgemm_ptr = f;
		return i;
	}
	return -1;
}

static const char *grpo_blas_corename(void) { return grpo_corename_ptr ? grpo_corename_ptr() : NULL; }
static const char *grpo_blas_config(void) { return grpo_config_ptr ? grpo_config_ptr() : NULL; }
static int grpo_blas_threads(void) { return grpo_get_threads_ptr ? grpo_get_threads_ptr() : 0; }

// grpo_cpu_level is the widest vector ISA this CPU has, in the levels of
// blas_info.go: 4 AVX-512 (F, BW, DQ, VL), 3 AVX2 with FMA, 2 AVX, 1 SSE.
static int grpo_cpu_level(void) {
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) return 4;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 3;
	if (__builtin_cpu_supports("avx")) return 2;
	return 1;
#else
	return 0;
#endif
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

// openBLASQuery returns what the loaded library reports about itself (its
// core and config empty, threads 0, where it lacks the call) and the CPU's
// vector level (0 off x86-64).
func openBLASQuery() (lib, core, config string, threads, cpuLevel int, err error) {
	if _, err := loadOpenBLAS(); err != nil {
		return "", "", "", 0, int(C.grpo_cpu_level()), err
	}
	str := func(p *C.char) string {
		if p == nil {
			return ""
		}
		return C.GoString(p)
	}
	return openBLAS.name, str(C.grpo_blas_corename()), str(C.grpo_blas_config()), int(C.grpo_blas_threads()), int(C.grpo_cpu_level()), nil
}
