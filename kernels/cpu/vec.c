//go:build cgo

// The CPU backend's fast elementwise kernels (see vec_kernels.h), compiled
// for SSE2 (every x86-64, and the plain build elsewhere), AVX2+FMA and
// AVX-512F; grpo_vec_select picks one at run time from what the CPU
// supports. Built by cgo with -O3 (vec_cgo.go); CGO_ENABLED=0 builds leave
// this file out and the backend keeps its plain-Go kernels.

#include "vec.h"
#include <emmintrin.h>

// grpo_sqrt1 is the correctly rounded √x of the SSE2 instruction, as
// __builtin_sqrt gives for x ≥ 0; calling the builtin would keep a libm
// fallback for errno on negative x (cgo cannot pass -fno-math-errno), and
// the binary would then need libm.so.6 besides libc (the cuda build's
// link check allows only libc and libcuda).
static inline double grpo_sqrt1(double x) { return _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd(x))); }

#define SFX sse2
#define W 4
#define GRPO_HALF __m128d
#define GRPO_SQRT_HALF _mm_sqrt_pd
#define FAULT 0
#include "vec_kernels.h"
#undef FAULT
#define FAULT 1
#include "vec_kernels.h"
#undef FAULT
#define FAULT 2
#include "vec_kernels.h"
#undef FAULT
#undef W
#undef SFX
#undef GRPO_HALF
#undef GRPO_SQRT_HALF

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GRPO_X86 1
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define SFX avx2
#define W 8
#define GRPO_HALF __m256d
#define GRPO_SQRT_HALF _mm256_sqrt_pd
#define FAULT 0
#include "vec_kernels.h"
#undef FAULT
#define FAULT 1
#include "vec_kernels.h"
#undef FAULT
#define FAULT 2
#include "vec_kernels.h"
#undef FAULT
#undef W
#undef SFX
#undef GRPO_HALF
#undef GRPO_SQRT_HALF
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512vl,avx2,fma")
#define SFX avx512
#define W 16
#define GRPO_HALF __m512d
#define GRPO_SQRT_HALF _mm512_sqrt_pd
#define FAULT 0
#include "vec_kernels.h"
#undef FAULT
#define FAULT 1
#include "vec_kernels.h"
#undef FAULT
#define FAULT 2
#include "vec_kernels.h"
#undef FAULT
#undef W
#undef SFX
#undef GRPO_HALF
#undef GRPO_SQRT_HALF
#pragma GCC pop_options
#endif

// Indexed by GRPO_ISA_* · 3 + fault.
static const struct grpo_vec *const grpo_vec_all[] = {
	&grpo_vec_sse2_0, &grpo_vec_sse2_1, &grpo_vec_sse2_2,
#ifdef GRPO_X86
	&grpo_vec_avx2_0, &grpo_vec_avx2_1, &grpo_vec_avx2_2,
	&grpo_vec_avx512_0, &grpo_vec_avx512_1, &grpo_vec_avx512_2,
#endif
};

int grpo_vec_best(void) {
#ifdef GRPO_X86
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
		return GRPO_ISA_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return GRPO_ISA_AVX2;
#endif
	return GRPO_ISA_SSE2;
}

const struct grpo_vec *grpo_vec_get(int isa, int fault) {
	if (isa < 0 || isa > grpo_vec_best() || fault < 0 || fault > 2) return 0;
	return grpo_vec_all[isa * 3 + fault];
}
