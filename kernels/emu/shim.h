// shim.h lets g++ compile the CUDA sources in kernels/cuda/*.cu as host C++.
// It supplies what nvcc and the CUDA headers would: the execution-space
// qualifiers, threadIdx/blockIdx/blockDim/gridDim, __syncthreads and the
// warp intrinsics (implemented by the fiber scheduler in runtime.cc),
// __shared__ memory, atomics, bf16 and the device math library. Anything a
// kernel uses that is not here fails to compile under emu, which is the
// point: a kernel that cannot run under emu does not exist.
#pragma once

#define GRPO_EMU 1

#include <math.h>
#include <stdint.h>
#include <string.h>

// ---- execution-space qualifiers -------------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __launch_bounds__(...)
// A kernel has internal linkage under emu so that a test-only translation
// unit can include the same .cu again (with a bug planted by a macro)
// without clashing symbols; each TU registers its kernels by address.
#define GRPO_KERNEL static
// Static shared memory is declared GRPO_SHARED(T, name, dims) (common.cuh
// makes it `__shared__ T name dims` under nvcc). Under emu the variable is
// thread_local: a worker thread runs one block at a time, and all fibers of
// that block run on it, so thread-local storage is exactly per-block
// storage. The first thread of a block to reach the declaration fills it
// with 0xFF bytes (NaN as float, -1 as int), as dynamic shared memory is, so
// a read before the block wrote it shows up instead of seeing the previous
// block's values. A bare __shared__ would skip the fill, so it does not
// compile here.
#define GRPO_SHARED(T, name, dims)                 \
	thread_local T name dims;                  \
	thread_local unsigned long long name##_emu_block_; \
	::emu::fill_static_shared(&name, sizeof(name), &name##_emu_block_)
#define __shared__ static_shared_memory_must_be_declared_with_GRPO_SHARED
// Dynamic shared memory (extern __shared__ on a GPU): a per-block buffer of
// the launch's sharedBytes, filled with 0xFF bytes (NaN as float) before
// each block so a read before a write shows up.
#define GRPO_DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(::emu::dynamic_shared())

struct uint3 {
	unsigned int x, y, z;
};
struct dim3 {
	unsigned int x, y, z;
	dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace emu {

// ThreadState is the part of a fiber that kernels see.
struct ThreadState {
	uint3 tid;
	int lane;  // linear thread index % 32
};
struct BlockState {
	uint3 bid;
	uint3 bdim;
	uint3 gdim;
};

extern thread_local ThreadState* cur_thread;
extern thread_local BlockState* cur_block;

void* dynamic_shared();
// fill_static_shared fills a static shared variable of bytes at p once per
// block: block holds the serial of the block that last filled it.
void fill_static_shared(void* p, size_t bytes, unsigned long long* block);
// Barriers switch fibers, so the compiler must not move memory accesses
// across them: they are opaque calls defined in runtime.cc.
__attribute__((noinline)) void syncthreads();
__attribute__((noinline)) void syncwarp(unsigned mask);
// shfl publishes v for the lanes of this warp in mask and returns the value
// published by srcLane (v itself when srcLane is out of range).
__attribute__((noinline)) uint64_t shfl(unsigned mask, uint64_t v, int srcLane);
// vote returns the mask of lanes in mask whose pred is true.
__attribute__((noinline)) unsigned vote(unsigned mask, bool pred);
[[noreturn]] void trap(const char* why);

}  // namespace emu

#define threadIdx (::emu::cur_thread->tid)
#define blockIdx (::emu::cur_block->bid)
#define blockDim (::emu::cur_block->bdim)
#define gridDim (::emu::cur_block->gdim)
#define warpSize 32

inline void __syncthreads() { ::emu::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::emu::syncwarp(mask); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __trap() { ::emu::trap("__trap() called"); }

// ---- warp shuffles and votes (CUDA semantics, width a power of two ≤ 32) --

namespace emu {
template <class T>
inline uint64_t to_bits(T v) {
	static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
	uint64_t b = 0;
	memcpy(&b, &v, sizeof(T));
	return b;
}
template <class T>
inline T from_bits(uint64_t b) {
	T v;
	memcpy(&v, &b, sizeof(T));
	return v;
}
inline int lane_id() { return cur_thread->lane; }
}  // namespace emu

template <class T>
inline T __shfl_sync(unsigned mask, T v, int srcLane, int width = 32) {
	int lane = emu::lane_id();
	int src = (lane & ~(width - 1)) + (srcLane & (width - 1));
	return emu::from_bits<T>(emu::shfl(mask, emu::to_bits(v), src));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = 32) {
	int lane = emu::lane_id();
	int src = lane ^ laneMask;
	if ((src & ~(width - 1)) != (lane & ~(width - 1))) src = lane;  // outside the segment: own value
	return emu::from_bits<T>(emu::shfl(mask, emu::to_bits(v), src));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
	int lane = emu::lane_id();
	int src = lane + (int)delta;
	if ((src & ~(width - 1)) != (lane & ~(width - 1))) src = lane;
	return emu::from_bits<T>(emu::shfl(mask, emu::to_bits(v), src));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
	int lane = emu::lane_id();
	int src = lane - (int)delta;
	if (src < 0 || (src & ~(width - 1)) != (lane & ~(width - 1))) src = lane;
	return emu::from_bits<T>(emu::shfl(mask, emu::to_bits(v), src));
}
inline unsigned __ballot_sync(unsigned mask, int pred) { return emu::vote(mask, pred != 0); }
// __ffs: the 1-based position of the lowest set bit, 0 for none.
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __all_sync(unsigned mask, int pred) { return emu::vote(mask, pred != 0) == emu::vote(mask, true); }
inline int __any_sync(unsigned mask, int pred) { return emu::vote(mask, pred != 0) != 0; }

// ---- atomics: blocks run in parallel on OS threads, so these are real ----
// Each one is counted (Device.Atomics reports them per kernel), so a test
// can require a kernel to use none.

namespace emu {
void count_atomic();
// count_read adds bytes to the launch's counted reads (GRPO_COUNT_READ:
// Device.ReadBytes reports them per kernel).
void count_read(unsigned long long bytes);
}

inline int atomicAdd(int* p, int v) {
	::emu::count_atomic();
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
	::emu::count_atomic();
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
	::emu::count_atomic();
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
namespace emu {
// cas_update applies f to *p atomically (a compare-and-swap loop, as CUDA
// itself implements the atomics it lacks) and returns the old value.
template <class T, class F>
inline T cas_update(T* p, F f) {
	T old;
	__atomic_load(p, &old, __ATOMIC_SEQ_CST);
	T want;
	do {
		want = f(old);
	} while (!__atomic_compare_exchange(p, &old, &want, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
	return old;
}
}  // namespace emu
inline float atomicAdd(float* p, float v) {
	::emu::count_atomic();
	return emu::cas_update(p, [v](float o) { return o + v; });
}
inline int atomicMax(int* p, int v) {
	::emu::count_atomic();
	return emu::cas_update(p, [v](int o) { return o > v ? o : v; });
}
inline int atomicMin(int* p, int v) {
	::emu::count_atomic();
	return emu::cas_update(p, [v](int o) { return o < v ? o : v; });
}
inline unsigned atomicMax(unsigned* p, unsigned v) {
	::emu::count_atomic();
	return emu::cas_update(p, [v](unsigned o) { return o > v ? o : v; });
}
inline int atomicExch(int* p, int v) {
	::emu::count_atomic();
	return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
inline float atomicExch(float* p, float v) {
	::emu::count_atomic();
	float old;
	__atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
	return old;
}
inline int atomicCAS(int* p, int cmp, int v) {
	::emu::count_atomic();
	__atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return cmp;
}
inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) {
	::emu::count_atomic();
	__atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return cmp;
}

// ---- device math: the CUDA names over libm -------------------------------

// expf, logf and rsqrtf go through emu::perturb: with emu_set_math_ulps(n)
// (emu.SetMathULPs, or GRPO_EMU_MATH_ULPS=n in the environment) every
// finite non-zero result moves n ulp up or down, the direction chosen by a
// hash of the argument. The GPU's expf/logf are within 2 ulp of the true
// value and its rsqrtf within 2 (CUDA C Programming Guide, appendix
// "Mathematical Functions"), glibc's within 1: the conformance suites must
// hold either way. n = 0 (the default) is libm.
namespace emu {
float perturb(float r, float x);
}
inline float grpo_emu_expf(float x) { return ::emu::perturb(::expf(x), x); }
inline float grpo_emu_logf(float x) { return ::emu::perturb(::logf(x), x); }
inline float rsqrtf(float x) { return ::emu::perturb(1.0f / sqrtf(x), x); }
#define expf grpo_emu_expf
#define logf grpo_emu_logf
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
inline float __int_as_float(int i) { return emu::from_bits<float>((uint32_t)i); }
inline int __float_as_int(float f) { return (int)(uint32_t)emu::to_bits(f); }
inline unsigned __float_as_uint(float f) { return (uint32_t)emu::to_bits(f); }
inline float __uint_as_float(unsigned u) { return emu::from_bits<float>(u); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
template <class T>
inline T __ldg(const T* p) { return *p; }

// ---- bfloat16 (the subset of cuda_bf16.h the kernels use) ----------------

struct __nv_bfloat16 {
	unsigned short __x;
};
inline float __bfloat162float(__nv_bfloat16 h) { return __uint_as_float((unsigned)h.__x << 16); }
// Round to nearest even; NaN becomes the canonical quiet NaN, as in
// cuda_bf16.h.
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
	unsigned u = __float_as_uint(f);
	__nv_bfloat16 h;
	if ((u & 0x7fffffffu) > 0x7f800000u) {
		h.__x = 0x7fff;
		return h;
	}
	u += 0x7fffu + ((u >> 16) & 1u);
	h.__x = (unsigned short)(u >> 16);
	return h;
}
inline __nv_bfloat16 __float2bfloat16(float f) { return __float2bfloat16_rn(f); }

// ---- nvcuda::wmma (mma.h) ------------------------------------------------

#include "wmma.h"

// ---- mma.sync m16n8k16 and cp.async (inline PTX on a GPU) ----------------

#include "mma.h"
