// runtime.h is the C interface between the Go side of the emulator (emu.go)
// and the fiber runtime (runtime.cc), plus the registration macro the
// per-family translation units (k_*.cc) use.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// emu_register_all registers every kernel of every family; idempotent.
void emu_register_all(void);

// emu_launch_prepare looks up kernel name, validates the launch
// configuration and copies the argument values (args[i] points at argSizes[i]
// bytes, as for cuLaunchKernel). It returns a handle, or NULL with the reason
// in err (errLen bytes).
void* emu_launch_prepare(const char* name, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			 unsigned bz, size_t sharedBytes, void** args, const size_t* argSizes, int nArgs, char* err,
			 size_t errLen);
// emu_launch_run runs blocks of the launch until none are left. Several OS
// threads may call it on the same handle at once; each takes blocks from a
// shared counter.
void emu_launch_run(void* launch);
// emu_launch_atomics is the number of atomic operations the launch's
// blocks made (once every emu_launch_run call has returned).
uint64_t emu_launch_atomics(void* launch);
// emu_launch_reads is the bytes of device memory the launch's blocks
// counted as read (GRPO_COUNT_READ in kernels/cuda/common.cuh).
uint64_t emu_launch_reads(void* launch);
// emu_launch_finish frees the launch and returns 0, or 1 with the first
// error any block raised in err.
int emu_launch_finish(void* launch, char* err, size_t errLen);

// emu_gemm is the host stand-in for cuBLAS (not emulated: a plain loop with
// f32 accumulation). Column-major, like cublasSgemm.
void emu_gemm(int transA, int transB, int m, int n, int k, float alpha, const float* A, int lda, const float* B,
	      int ldb, float beta, float* C, int ldc);
// emu_gemm_bf16 stands in for cublasGemmEx with bf16 A and B (bit
// patterns, widened exactly), f32 C and f32 accumulation: the contract of
// CUBLAS_COMPUTE_32F, not cuBLAS's blocking or tensor-core order.
void emu_gemm_bf16(int transA, int transB, int m, int n, int k, float alpha, const uint16_t* A, int lda,
		   const uint16_t* B, int ldb, float beta, float* C, int ldc);
// emu_gemm_bf16c is emu_gemm_bf16 with a bf16 C: the same f32 sums in the
// same order, alpha·sum + beta·C (C widened) rounded to nearest-even at
// the store.
void emu_gemm_bf16c(int transA, int transB, int m, int n, int k, float alpha, const uint16_t* A, int lda,
		    const uint16_t* B, int ldb, float beta, uint16_t* C, int ldc);

// emu_set_math_ulps makes expf, logf and rsqrtf in kernels return results
// n ulp away from libm's (up or down by a hash of the argument); 0 restores
// libm. Set it only while no kernel runs.
void emu_set_math_ulps(int n);

// emu_set_block_order makes launches take their blocks in reverse order
// (last block first) when reversed is 1, in order when 0. Set it only
// while no kernel runs.
void emu_set_block_order(int reversed);

// emu_kernel_count reports how many kernels are registered (for tests).
int emu_kernel_count(void);

#ifdef __cplusplus
}

#include <utility>

namespace emu {
typedef void (*Trampoline)(void* fn, void** args);
// Arity of a kernel, checked against the launch's argument count.
void register_kernel(const char* name, void* fn, Trampoline tramp, int nArgs, const size_t* argSizes);

template <class... A>
struct Tramp {
	template <size_t... I>
	static void call(void (*fn)(A...), void** args, std::index_sequence<I...>) {
		fn(*static_cast<A*>(args[I])...);
	}
	static void run(void* fn, void** args) {
		call(reinterpret_cast<void (*)(A...)>(fn), args, std::index_sequence_for<A...>{});
	}
};
template <class... A>
void register_fn(const char* prefix, const char* name, void (*fn)(A...)) {
	static const size_t sizes[sizeof...(A) + 1] = {sizeof(A)..., 0};
	char full[256];
	size_t i = 0;
	for (const char* p = prefix; *p && i < sizeof full - 1; p++) full[i++] = *p;
	for (const char* p = name; *p && i < sizeof full - 1; p++) full[i++] = *p;
	full[i] = 0;
	register_kernel(full, reinterpret_cast<void*>(fn), &Tramp<A...>::run, (int)sizeof...(A), sizes);
}
}  // namespace emu

// EMU_REG(k) registers kernel k under prefix+"k"; it is used inside each
// family's registration function, whose parameter is named prefix.
#define EMU_REG(k) ::emu::register_fn(prefix, #k, &k)
#endif
