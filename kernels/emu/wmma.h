// wmma.h: nvcuda::wmma (mma.h's warp matrix API) for kernels compiled
// under emu; shim.h includes it. It covers what the attention kernels use
// and what sm_80+ offers for bf16: fragments of 16×16×16, 32×8×16 and
// 8×32×16 with __nv_bfloat16 multiplicands (row or col major) and a float
// accumulator, fill_fragment, load_matrix_sync, store_matrix_sync and
// mma_sync.
//
// As on a GPU every call is collective over the warp: all 32 lanes must
// make it with the same pointer and leading dimension (a lane that skips
// it leaves the others at a barrier, which the fiber runtime reports as a
// deadlock, lanes at different wmma calls or with differing pointers
// trap). Pointers must be 32-byte aligned and
// ldm a multiple of 16 bytes, as the CUDA C Programming Guide requires.
//
// Fragment layout (unspecified by CUDA, so the emulator picks one): a
// fragment holds a rows × cols logical matrix (matrix_a: M×K, matrix_b:
// K×N, accumulator: M×N) as num_elements = rows·cols/32 elements per lane;
// element i of lane l is logical element e = l·num_elements + i in
// row-major order, row e / cols, column e % cols. The GPU's layout differs
// (sm_80's m16n16k16 accumulator gives lane l rows l/4 and l/4+8), so a
// kernel that reads fragment elements by position instead of through
// store_matrix_sync works on one of the two only and fails the
// conformance suite under emu. Element-wise operations on x[] that treat
// every element alike (scaling, conversion) are layout-free and portable.
//
// mma_sync computes d = a·b + c per element with f32 sums in k order,
// each bf16×bf16 product exact in f32 (8-bit significands), rounding to
// nearest after every add. Tensor cores sum in groups with truncating
// alignment instead; the conformance tolerances cover the difference.
#pragma once

namespace emu {
// warp_gather is a barrier of the warp's lanes in mask at which each lane
// publishes n values (in) and receives every lane's: all[lane·n + i]
// (lanes not taking part: all-ones poison). n ≤ kGatherMax.
const int kGatherMax = 4;
__attribute__((noinline)) void warp_gather(unsigned mask, const uint64_t* in, int n, uint64_t* all);
// warp_lanes is the number of threads in the calling thread's warp (32
// except in the last warp of a block whose size is not a multiple of 32).
int warp_lanes();
}  // namespace emu

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace detail {
template <class Use, int M, int N, int K>
struct shape;
template <int M, int N, int K>
struct shape<matrix_a, M, N, K> {
	static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct shape<matrix_b, M, N, K> {
	static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct shape<accumulator, M, N, K> {
	static constexpr int rows = M, cols = N;
};
template <class T, class U>
struct same {
	static constexpr bool value = false;
};
template <class T>
struct same<T, T> {
	static constexpr bool value = true;
};
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
	static constexpr bool kMultiplicand = !detail::same<Use, accumulator>::value;
	static_assert((M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) || (M == 8 && N == 32 && K == 16),
		      "wmma (emu): bf16 fragments are m16n16k16, m32n8k16 or m8n32k16");
	static_assert(!kMultiplicand || detail::same<T, __nv_bfloat16>::value,
		      "wmma (emu): matrix_a/matrix_b fragments hold __nv_bfloat16");
	static_assert(kMultiplicand || detail::same<T, float>::value, "wmma (emu): accumulators hold float");
	static_assert(!kMultiplicand || detail::same<Layout, row_major>::value || detail::same<Layout, col_major>::value,
		      "wmma (emu): matrix_a/matrix_b fragments need row_major or col_major");
	static_assert(kMultiplicand || detail::same<Layout, void>::value,
		      "wmma (emu): accumulator layout is given at load/store time");

   public:
	static constexpr int rows = detail::shape<Use, M, N, K>::rows;
	static constexpr int cols = detail::shape<Use, M, N, K>::cols;
	static constexpr int num_elements = rows * cols / 32;
	T x[num_elements];
};

namespace detail {
// Tags of the collective calls, published at their barrier so that lanes
// meeting at different calls (a divergent branch) are reported.
enum call_tag : uint64_t { kLoadStore = 0x574d4d41000001ull, kMMA = 0x574d4d41000002ull };

// collective is the barrier every call makes: all 32 lanes arrive at the
// same kind of call with the same two values (pointer and ldm for a load
// or store); all receives every lane's three published values.
inline void collective(call_tag tag, uint64_t v0, uint64_t v1, uint64_t* all) {
	if (::emu::warp_lanes() != 32) ::emu::trap("wmma: a warp with fewer than 32 threads (block size not a multiple of 32)");
	uint64_t mine[3] = {tag, v0, v1};
	::emu::warp_gather(0xffffffffu, mine, 3, all);
	for (int l = 0; l < 32; l++)
		if (all[3 * l] != tag) ::emu::trap("wmma: the lanes of a warp are not all at the same wmma call (a divergent branch?)");
}

// warp_check is the collective part of a load or store: the same pointer
// and ldm on every lane, meeting the alignment rules.
inline void warp_check(const void* p, unsigned ldm, size_t elemBytes) {
	if ((uintptr_t)p % 32 != 0) ::emu::trap("wmma: load/store pointer not 32-byte aligned");
	if ((ldm * elemBytes) % 16 != 0) ::emu::trap("wmma: ldm is not a multiple of 16 bytes");
	uint64_t all[3 * 32];
	collective(kLoadStore, (uint64_t)(uintptr_t)p, ldm, all);
	for (int l = 0; l < 32; l++)
		if (all[3 * l + 1] != (uint64_t)(uintptr_t)p || all[3 * l + 2] != ldm)
			::emu::trap("wmma: lanes of a warp passed different pointers or ldm to one load/store");
}
inline long long offset(int r, int c, unsigned ldm, bool rowMajor) {
	return rowMajor ? (long long)r * ldm + c : (long long)c * ldm + r;
}
template <class Frag, class T>
inline void load(Frag& f, const T* p, unsigned ldm, bool rowMajor) {
	warp_check(p, ldm, sizeof(T));
	int base = ::emu::lane_id() * Frag::num_elements;
	for (int i = 0; i < Frag::num_elements; i++) {
		int e = base + i;
		f.x[i] = p[offset(e / Frag::cols, e % Frag::cols, ldm, rowMajor)];
	}
}
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout, class V>
inline void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const V& v) {
	for (int i = 0; i < fragment<Use, M, N, K, T, Layout>::num_elements; i++) f.x[i] = v;
}

template <class Use, int M, int N, int K>
inline void load_matrix_sync(fragment<Use, M, N, K, __nv_bfloat16, row_major>& f, const __nv_bfloat16* p, unsigned ldm) {
	detail::load(f, p, ldm, true);
}
template <class Use, int M, int N, int K>
inline void load_matrix_sync(fragment<Use, M, N, K, __nv_bfloat16, col_major>& f, const __nv_bfloat16* p, unsigned ldm) {
	detail::load(f, p, ldm, false);
}
template <int M, int N, int K>
inline void load_matrix_sync(fragment<accumulator, M, N, K, float>& f, const float* p, unsigned ldm, layout_t layout) {
	detail::load(f, p, ldm, layout == mem_row_major);
}

template <int M, int N, int K>
inline void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm, layout_t layout) {
	typedef fragment<accumulator, M, N, K, float> Frag;
	detail::warp_check(p, ldm, sizeof(float));
	int base = ::emu::lane_id() * Frag::num_elements;
	for (int i = 0; i < Frag::num_elements; i++) {
		int e = base + i;
		p[detail::offset(e / Frag::cols, e % Frag::cols, ldm, layout == mem_row_major)] = f.x[i];
	}
}

// mma_sync: each lane publishes where its a and b elements are, computes
// its own elements of d from all lanes' (their fragments live on their
// fibers' stacks, parked at the barrier), then waits at a second barrier
// so that no lane overwrites a or b while another still reads them.
template <int M, int N, int K, class LA, class LB>
inline void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, __nv_bfloat16, LA>& a,
		     const fragment<matrix_b, M, N, K, __nv_bfloat16, LB>& b, const fragment<accumulator, M, N, K, float>& c) {
	typedef fragment<matrix_a, M, N, K, __nv_bfloat16, LA> FA;
	typedef fragment<matrix_b, M, N, K, __nv_bfloat16, LB> FB;
	typedef fragment<accumulator, M, N, K, float> FC;
	uint64_t all[3 * 32];
	detail::collective(detail::kMMA, (uint64_t)(uintptr_t)a.x, (uint64_t)(uintptr_t)b.x, all);
	int base = ::emu::lane_id() * FC::num_elements;
	float out[FC::num_elements];
	for (int i = 0; i < FC::num_elements; i++) {
		int e = base + i, r = e / N, col = e % N;
		float s = c.x[i];
		for (int k = 0; k < K; k++) {
			int ea = r * K + k, eb = k * N + col;
			const __nv_bfloat16* ax = (const __nv_bfloat16*)(uintptr_t)all[3 * (ea / FA::num_elements) + 1];
			const __nv_bfloat16* bx = (const __nv_bfloat16*)(uintptr_t)all[3 * (eb / FB::num_elements) + 2];
			// exact product of two bf16 values: one rounding, as fmaf
			s += __bfloat162float(ax[ea % FA::num_elements]) * __bfloat162float(bx[eb % FB::num_elements]);
		}
		out[i] = s;
	}
	::emu::syncwarp(0xffffffffu);
	for (int i = 0; i < FC::num_elements; i++) d.x[i] = out[i];
}

}  // namespace wmma
}  // namespace nvcuda
