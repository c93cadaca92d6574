// runtime.cc runs CUDA kernels on the CPU. A block's threads are fibers
// (own stacks, switched by a few instructions of assembly on x86-64 and by
// swapcontext elsewhere) run round-robin on one OS thread: each runs until
// it reaches a barrier (__syncthreads, __syncwarp, a shuffle or vote) or
// returns; when every live thread waits at the same kind of barrier the
// barrier opens. So __syncthreads is a real barrier, a missing one shows up
// as a read of data not yet written, and a barrier only some threads reach
// is reported instead of hanging (also when the other threads have
// returned). Blocks of a grid run in parallel on the
// OS threads that call emu_launch_run.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "runtime.h"
#include "shim.h"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

// Under AddressSanitizer (the CI job that builds emu with
// -fsanitize=address) every stack switch is announced, so ASan knows which
// stack a fiber runs on and reports its accesses against the right bounds.
#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#include <sanitizer/common_interface_defs.h>
#endif

namespace emu {

thread_local ThreadState* cur_thread;
thread_local BlockState* cur_block;

namespace {

const size_t kStackBytes = 64 << 10;  // per fiber; kernels keep little on the stack
const size_t kMaxThreads = 1024;       // per block, as on every CUDA GPU since sm_20
const size_t kMaxDynShared = 227 << 10;  // sm_90 opt-in maximum
const size_t kSharedAlign = 256;

// ---- context switch -------------------------------------------------------

#if defined(__x86_64__)
// emu_ctx_switch(save, to) saves the callee-saved registers, MXCSR and the
// x87 control word on the current stack, stores the stack pointer in *save
// and resumes the context whose stack pointer is to.
extern "C" void emu_ctx_switch(void** save, void* to);
asm(R"(
	.text
	.p2align 4
	.type emu_ctx_switch,@function
emu_ctx_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	subq $8, %rsp
	stmxcsr (%rsp)
	fnstcw 4(%rsp)
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	ldmxcsr (%rsp)
	fldcw 4(%rsp)
	addq $8, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size emu_ctx_switch,.-emu_ctx_switch
	.section .note.GNU-stack,"",@progbits
	.text
)");
struct Context {
	void* sp = nullptr;
};
#else
struct Context {
	ucontext_t uc;
};
#endif

enum State { kRunnable, kAtBlockBarrier, kAtWarpBarrier, kDone };

// CpCopy is a cp.async issued by a fiber and not yet completed: the 16
// bytes it read and where they go.
struct CpCopy {
	void* dst;
	unsigned char data[16];
};

struct Fiber {
	ThreadState ts;
	int linear;  // x + y·bx + z·bx·by
	State state;
	unsigned waitMask;   // lanes a warp barrier waits for
	uint64_t pubValue;   // value published at a warp barrier
	int shflSrc;         // lane to read after the warp barrier opens
	uint64_t result;     // what the barrier delivered
	// warp_gather: the values this lane publishes and where every lane's go.
	const uint64_t* gatherIn;
	uint64_t* gatherOut;
	int gatherN;
	char* stack;
	Context ctx;
	// cp.async (mma.h): copies in issue order, and the number of copies
	// issued when each committed group was closed.
	std::vector<CpCopy> cpPending;
	std::vector<size_t> cpGroupEnds;
};

struct Launch;

// Worker is one OS thread's fiber pool and per-block state. Fibers and
// their stacks are reused by every block this thread runs.
struct Worker {
	std::vector<Fiber> fibers;
	Context sched;
	// The OS thread's own stack, where the scheduler runs (for ASan's
	// fiber annotations; learnt at the first switch into a fiber).
	const void* schedStack = nullptr;
	size_t schedStackSize = 0;
	// blockSerial numbers the blocks this thread has run, so a static
	// shared variable knows whether this block has filled it yet.
	unsigned long long blockSerial = 0;
	BlockState block;
	// Dynamic shared memory, kSharedAlign-aligned as a GPU's (wmma loads
	// need 32 bytes): dynBase() is the block's buffer inside dynShared.
	std::vector<unsigned char> dynShared;
	unsigned char* dynBase() {
		uintptr_t p = (uintptr_t)dynShared.data();
		return (unsigned char*)((p + kSharedAlign - 1) & ~(uintptr_t)(kSharedAlign - 1));
	}
	Launch* launch = nullptr;
	Fiber* running = nullptr;
	bool forward = true;  // alternates so a race shows in either direction
	uint64_t atomics = 0;  // atomic operations of the blocks run for the current launch
	uint64_t reads = 0;    // bytes its blocks counted with GRPO_COUNT_READ
	std::vector<uint64_t> gathered;  // openWarpBarriers' gather, reused
	~Worker() {
		for (auto& f : fibers)
			if (f.stack) munmap(f.stack - pageSize(), kStackBytes + pageSize());
	}
	static size_t pageSize() { return (size_t)sysconf(_SC_PAGESIZE); }
};
thread_local Worker* tw;

struct Kernel {
	void* fn;
	Trampoline tramp;
	std::vector<size_t> argSizes;
};
std::mutex regMu;
std::map<std::string, Kernel>& registry() {
	static std::map<std::string, Kernel> r;
	return r;
}

struct Launch {
	Kernel k;
	uint3 grid, block;
	size_t shared;
	std::vector<std::vector<unsigned char>> argData;
	std::vector<void*> args;
	std::atomic<uint64_t> next{0};
	uint64_t nBlocks;
	std::mutex errMu;
	std::string err;
	std::atomic<bool> failed{false};
	std::atomic<uint64_t> atomics{0};
	std::atomic<uint64_t> reads{0};
	void fail(const std::string& why) {
		std::lock_guard<std::mutex> l(errMu);
		if (err.empty()) err = why;
		failed = true;
	}
};

// switchTo saves the running context in save and resumes to, whose stack
// is [stack, stack+size) (nullptr: the OS thread's own stack). last says
// the saving context never runs again (a fiber that returned), which ASan
// needs to forget its stack.
void switchTo(Context* save, Context* to, const void* stack, size_t size, bool last = false) {
#if EMU_ASAN
	void* fake = nullptr;
	if (!stack) {
		stack = tw->schedStack;
		size = tw->schedStackSize;
	}
	__sanitizer_start_switch_fiber(last ? nullptr : &fake, stack, size);
#else
	(void)stack, (void)size, (void)last;
#endif
#if defined(__x86_64__)
	emu_ctx_switch(&save->sp, to->sp);
#else
	swapcontext(&save->uc, &to->uc);
#endif
#if EMU_ASAN
	__sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

// Fiber body: run the kernel for this thread, then hand control back for
// good. The scheduler never resumes a kDone fiber.
void fiberMain() {
	Worker* w = tw;
#if EMU_ASAN
	// First entry: finish the switch the scheduler started, learning its
	// stack's bounds.
	__sanitizer_finish_switch_fiber(nullptr, &w->schedStack, &w->schedStackSize);
#endif
	Fiber* f = w->running;
	w->launch->k.tramp(w->launch->k.fn, w->launch->args.data());
	f->state = kDone;
	switchTo(&f->ctx, &w->sched, nullptr, 0, true);
	__builtin_unreachable();
}

void initStack(Fiber& f) {
#if defined(__x86_64__)
	// Frame emu_ctx_switch pops: MXCSR/x87 word, r15..r12, rbx, rbp, then
	// the return address fiberMain. Above it a zero fake return address
	// keeps the ABI's rsp ≡ 8 (mod 16) at function entry.
	uintptr_t top = ((uintptr_t)f.stack + kStackBytes) & ~(uintptr_t)15;
	uint64_t* sp = (uint64_t*)(top - 72);
	uint32_t csr[2];
	asm volatile("stmxcsr %0" : "=m"(csr[0]));
	asm volatile("fnstcw %0" : "=m"(csr[1]));
	memcpy(&sp[0], csr, 8);
	for (int i = 1; i <= 6; i++) sp[i] = 0;
	sp[7] = (uint64_t)(uintptr_t)&fiberMain;
	sp[8] = 0;
	f.ctx.sp = sp;
#else
	getcontext(&f.ctx.uc);
	f.ctx.uc.uc_stack.ss_sp = f.stack;
	f.ctx.uc.uc_stack.ss_size = kStackBytes;
	f.ctx.uc.uc_link = nullptr;
	makecontext(&f.ctx.uc, fiberMain, 0);
#endif
}

bool ensureFibers(Worker* w, size_t n) {
	size_t page = Worker::pageSize();
	while (w->fibers.size() < n) {
		// One guard page below each stack turns an overflow into a fault
		// instead of silent corruption of the neighbouring stack.
		void* m = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) return false;
		mprotect(m, page, PROT_NONE);
		Fiber f{};
		f.stack = (char*)m + page;
		w->fibers.push_back(f);
	}
	return true;
}

std::string stateName(State s) {
	switch (s) {
	case kRunnable: return "running";
	case kAtBlockBarrier: return "at __syncthreads";
	case kAtWarpBarrier: return "at a warp barrier (shuffle/__syncwarp/vote)";
	case kDone: return "returned";
	}
	return "?";
}

// openWarpBarriers releases every warp whose lanes named in the waiting
// lanes' masks have all arrived, delivering shuffle results. It reports
// whether any warp was released.
bool openWarpBarriers(Worker* w, size_t n) {
	bool any = false;
	std::vector<uint64_t>& gathered = w->gathered;
	for (size_t base = 0; base < n; base += 32) {
		size_t end = base + 32 < n ? base + 32 : n;
		unsigned want = 0, waiting = 0;
		for (size_t i = base; i < end; i++) {
			Fiber& f = w->fibers[i];
			if (f.state == kAtWarpBarrier) {
				want |= f.waitMask;
				waiting |= 1u << (i - base);
			}
		}
		if (!waiting) continue;
		unsigned exists = end - base == 32 ? 0xffffffffu : ((1u << (end - base)) - 1);
		if ((want & exists & ~waiting) != 0) continue;  // someone in the mask has not arrived
		// A gather's values, lane by lane (gatherN of the largest request
		// each, poison where a lane did not take part or gave fewer), built
		// once and copied to every taking-part lane: an mma gathers on
		// each call, and building it per lane was 32² copies.
		size_t gn = 0;
		for (size_t i = base; i < end; i++) {
			Fiber& f = w->fibers[i];
			if (f.state == kAtWarpBarrier && f.shflSrc == -3 && (size_t)f.gatherN > gn) gn = f.gatherN;
		}
		if (gn) {
			gathered.assign(32 * gn, ~(uint64_t)0);
			for (size_t j = 0; j < 32 && base + j < end; j++) {
				Fiber& o = w->fibers[base + j];
				if ((waiting >> j & 1) && o.shflSrc == -3)
					std::copy(o.gatherIn, o.gatherIn + o.gatherN, gathered.data() + j * gn);
			}
		}
		for (size_t i = base; i < end; i++) {
			Fiber& f = w->fibers[i];
			if (f.state != kAtWarpBarrier) continue;
			int src = f.shflSrc;
			if (src >= 0 && src < 32 && (waiting >> src & 1))
				f.result = w->fibers[base + src].pubValue;
			else if (src >= 0 && src < 32 && base + src < end)
				f.result = f.pubValue;  // source lane did not take part: undefined on a GPU
			else
				f.result = ~(uint64_t)0;  // lane does not exist: poison (NaN)
			if (src == -3) {  // gather: every taking-part lane's values, poison for the rest
				size_t fn = f.gatherN;
				if (fn == gn)
					std::copy(gathered.begin(), gathered.end(), f.gatherOut);
				else
					for (size_t j = 0; j < 32; j++)
						std::copy(gathered.begin() + j * gn, gathered.begin() + j * gn + fn, f.gatherOut + j * fn);
			}
			if (src == -2) {              // vote: collect the predicate bits
				unsigned bits = 0;
				for (size_t j = base; j < end; j++)
					if ((waiting >> (j - base) & 1) && w->fibers[j].pubValue) bits |= 1u << (j - base);
				f.result = bits & f.waitMask;
			}
			f.state = kRunnable;
		}
		any = true;
	}
	return any;
}

void runBlock(Worker* w, Launch* L, uint64_t b) {
	uint3 g = L->grid, d = L->block;
	w->block.bid = uint3{(unsigned)(b % g.x), (unsigned)(b / g.x % g.y), (unsigned)(b / ((uint64_t)g.x * g.y))};
	w->block.bdim = d;
	w->block.gdim = g;
	size_t n = (size_t)d.x * d.y * d.z;
	if (L->shared) memset(w->dynBase(), 0xff, L->shared);
	w->blockSerial++;
	for (size_t i = 0; i < n; i++) {
		Fiber& f = w->fibers[i];
		f.linear = (int)i;
		f.ts.tid = uint3{(unsigned)(i % d.x), (unsigned)(i / d.x % d.y), (unsigned)(i / ((size_t)d.x * d.y))};
		f.ts.lane = (int)(i % 32);
		f.state = kRunnable;
		f.cpPending.clear();
		f.cpGroupEnds.clear();
		initStack(f);
	}
	cur_block = &w->block;
	for (;;) {
		bool fwd = w->forward;
		for (size_t j = 0; j < n; j++) {
			Fiber& f = w->fibers[fwd ? j : n - 1 - j];
			if (f.state != kRunnable) continue;
			w->running = &f;
			cur_thread = &f.ts;
			switchTo(&w->sched, &f.ctx, f.stack, kStackBytes);
			if (L->failed) return;
		}
		w->forward = !fwd;
		if (openWarpBarriers(w, n)) continue;
		size_t done = 0, atBlock = 0;
		for (size_t i = 0; i < n; i++) {
			done += w->fibers[i].state == kDone;
			atBlock += w->fibers[i].state == kAtBlockBarrier;
		}
		if (done == n) return;
		// Strict, as the CUDA programming guide: a __syncthreads that some
		// threads skip (by returning early, say) is an error, not a barrier
		// among the remaining ones.
		if (atBlock == n) {
			for (size_t i = 0; i < n; i++)
				if (w->fibers[i].state == kAtBlockBarrier) w->fibers[i].state = kRunnable;
			continue;
		}
		// Nobody can move: threads wait at barriers the others never reach.
		std::string why = "barrier deadlock in block (" + std::to_string(w->block.bid.x) + "," +
				  std::to_string(w->block.bid.y) + "," + std::to_string(w->block.bid.z) + "):";
		int shown = 0;
		for (size_t i = 0; i < n && shown < 4; i++) {
			Fiber& f = w->fibers[i];
			if (i == 0 || f.state != w->fibers[i - 1].state) {
				why += " thread " + std::to_string(i) + " " + stateName(f.state) + ";";
				shown++;
			}
		}
		L->fail(why + " every thread of a block must reach the same barriers");
		return;
	}
}

// block parks the running fiber in state s and returns to the scheduler.
void park(State s) {
	Worker* w = tw;
	Fiber* f = w->running;
	f->state = s;
	switchTo(&f->ctx, &w->sched, nullptr, 0);
	// Resumed: the scheduler set cur_thread back to this fiber.
}

}  // namespace

void* dynamic_shared() { return tw->dynBase(); }

void fill_static_shared(void* p, size_t bytes, unsigned long long* block) {
	if (*block == tw->blockSerial) return;
	memset(p, 0xff, bytes);
	*block = tw->blockSerial;
}

int math_ulps = 0;
int block_order = 0;  // emu_set_block_order

void count_atomic() { tw->atomics++; }
void count_read(unsigned long long bytes) { tw->reads += bytes; }

float perturb(float r, float x) {
	if (math_ulps == 0 || r == 0 || !isfinite(r)) return r;
	uint32_t b;
	memcpy(&b, &x, 4);
	b *= 0x9E3779B9u;  // Fibonacci hash: the sign bit depends on every bit of x
	float toward = (b >> 31) ? INFINITY : -INFINITY;
	for (int i = 0; i < math_ulps; i++) r = nextafterf(r, toward);
	return r;
}

void syncthreads() { park(kAtBlockBarrier); }

void syncwarp(unsigned mask) {
	Fiber* f = tw->running;
	f->waitMask = mask;
	f->shflSrc = -1;
	park(kAtWarpBarrier);
}

uint64_t shfl(unsigned mask, uint64_t v, int srcLane) {
	Fiber* f = tw->running;
	f->waitMask = mask;
	f->pubValue = v;
	f->shflSrc = srcLane;
	park(kAtWarpBarrier);
	return f->result;
}

unsigned vote(unsigned mask, bool pred) {
	Fiber* f = tw->running;
	f->waitMask = mask;
	f->pubValue = pred;
	f->shflSrc = -2;
	park(kAtWarpBarrier);
	return (unsigned)f->result;
}

void warp_gather(unsigned mask, const uint64_t* in, int n, uint64_t* all) {
	if (n < 1 || n > kGatherMax) trap("warp_gather: n outside 1..kGatherMax");
	Fiber* f = tw->running;
	f->waitMask = mask;
	f->gatherIn = in;
	f->gatherOut = all;
	f->gatherN = n;
	f->shflSrc = -3;
	park(kAtWarpBarrier);
}

void cp_async16(void* dst, const void* src, bool valid) {
	if ((uintptr_t)dst % 16 != 0 || (valid && (uintptr_t)src % 16 != 0)) trap("cp.async: a 16-byte copy not 16-byte aligned");
	CpCopy c;
	c.dst = dst;
	if (valid)
		memcpy(c.data, src, 16);
	else
		memset(c.data, 0, 16);
	tw->running->cpPending.push_back(c);
}

void cp_async_commit() {
	Fiber* f = tw->running;
	f->cpGroupEnds.push_back(f->cpPending.size());
}

void cp_async_wait(int pending) {
	Fiber* f = tw->running;
	int groups = (int)f->cpGroupEnds.size();
	if (groups <= pending) return;
	size_t done = f->cpGroupEnds[groups - pending - 1];
	for (size_t i = 0; i < done; i++) memcpy(f->cpPending[i].dst, f->cpPending[i].data, 16);
	f->cpPending.erase(f->cpPending.begin(), f->cpPending.begin() + done);
	f->cpGroupEnds.erase(f->cpGroupEnds.begin(), f->cpGroupEnds.begin() + (groups - pending));
	for (auto& e : f->cpGroupEnds) e -= done;
}

int warp_lanes() {
	const uint3 d = tw->block.bdim;
	int n = (int)(d.x * d.y * d.z), base = tw->running->linear & ~31;
	return n - base < 32 ? n - base : 32;
}

void trap(const char* why) {
	Worker* w = tw;
	w->launch->fail(std::string("kernel trapped: ") + why);
	Fiber* f = w->running;
	f->state = kDone;
	switchTo(&f->ctx, &w->sched, nullptr, 0, true);
	__builtin_unreachable();
}

void register_kernel(const char* name, void* fn, Trampoline tramp, int nArgs, const size_t* argSizes) {
	std::lock_guard<std::mutex> l(regMu);
	registry()[name] = Kernel{fn, tramp, std::vector<size_t>(argSizes, argSizes + nArgs)};
}

}  // namespace emu

using namespace emu;

static void putErr(char* err, size_t errLen, const std::string& s) {
	if (!errLen) return;
	size_t n = s.size() < errLen - 1 ? s.size() : errLen - 1;
	memcpy(err, s.data(), n);
	err[n] = 0;
}

extern "C" void emu_set_math_ulps(int n) { emu::math_ulps = n; }

extern "C" void emu_set_block_order(int reversed) { emu::block_order = reversed; }

extern "C" uint64_t emu_launch_atomics(void* launch) { return ((Launch*)launch)->atomics.load(); }

extern "C" uint64_t emu_launch_reads(void* launch) { return ((Launch*)launch)->reads.load(); }

extern "C" int emu_kernel_count(void) {
	std::lock_guard<std::mutex> l(regMu);
	return (int)registry().size();
}

extern "C" void* emu_launch_prepare(const char* name, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
				   unsigned by, unsigned bz, size_t sharedBytes, void** args, const size_t* argSizes,
				   int nArgs, char* err, size_t errLen) {
	Kernel k;
	{
		std::lock_guard<std::mutex> l(regMu);
		auto it = registry().find(name);
		if (it == registry().end()) {
			putErr(err, errLen, std::string("no kernel named ") + name + " (is it registered in its kernels/emu/k_*.cc?)");
			return nullptr;
		}
		k = it->second;
	}
	if ((int)k.argSizes.size() != nArgs) {
		putErr(err, errLen, std::string(name) + ": launched with " + std::to_string(nArgs) + " arguments, kernel takes " +
					     std::to_string(k.argSizes.size()));
		return nullptr;
	}
	for (int i = 0; i < nArgs; i++)
		if (k.argSizes[i] != argSizes[i]) {
			putErr(err, errLen, std::string(name) + ": argument " + std::to_string(i) + " has " +
						     std::to_string(argSizes[i]) + " bytes, kernel expects " +
						     std::to_string(k.argSizes[i]));
			return nullptr;
		}
	uint64_t threads = (uint64_t)bx * by * bz;
	if (!gx || !gy || !gz || !threads || threads > kMaxThreads || bz > 64 || gy > 65535 || gz > 65535) {
		putErr(err, errLen, std::string(name) + ": invalid launch configuration grid (" + std::to_string(gx) + "," +
					     std::to_string(gy) + "," + std::to_string(gz) + ") block (" + std::to_string(bx) + "," +
					     std::to_string(by) + "," + std::to_string(bz) + ")");
		return nullptr;
	}
	if (sharedBytes > kMaxDynShared) {
		putErr(err, errLen, std::string(name) + ": " + std::to_string(sharedBytes) +
					     " bytes of dynamic shared memory exceed the 227 KiB of sm_90");
		return nullptr;
	}
	Launch* L = new Launch;
	L->k = k;
	L->grid = uint3{gx, gy, gz};
	L->block = uint3{bx, by, bz};
	L->shared = sharedBytes;
	L->nBlocks = (uint64_t)gx * gy * gz;
	for (int i = 0; i < nArgs; i++) {
		const unsigned char* p = (const unsigned char*)args[i];
		L->argData.emplace_back(p, p + argSizes[i]);
	}
	for (auto& a : L->argData) L->args.push_back(a.data());
	return L;
}

extern "C" void emu_launch_run(void* launch) {
	Launch* L = (Launch*)launch;
	if (!tw) tw = new Worker;  // lives as long as the OS thread; Go reuses its threads
	Worker* w = tw;
	size_t n = (size_t)L->block.x * L->block.y * L->block.z;
	if (!ensureFibers(w, n)) {
		L->fail("out of memory for fiber stacks");
		return;
	}
	if (w->dynShared.size() < L->shared + kSharedAlign) w->dynShared.resize(L->shared + kSharedAlign);
	w->launch = L;
	w->atomics = 0;
	w->reads = 0;
	for (;;) {
		uint64_t b = L->next.fetch_add(1);
		if (b >= L->nBlocks || L->failed) break;
		runBlock(w, L, block_order ? L->nBlocks - 1 - b : b);
	}
	L->atomics += w->atomics;
	L->reads += w->reads;
	w->launch = nullptr;
	cur_thread = nullptr;
	cur_block = nullptr;
}

extern "C" int emu_launch_finish(void* launch, char* err, size_t errLen) {
	Launch* L = (Launch*)launch;
	int rc = 0;
	if (L->failed) {
		putErr(err, errLen, L->err);
		rc = 1;
	}
	delete L;
	return rc;
}

// gemm is the loop behind the GEMM stand-ins; load widens an element of A,
// B or C to float (exactly: f32 as is, bf16 by a shift), store narrows the
// result into C (f32 as is, bf16 rounded).
template <typename T, typename TC, typename Load, typename LoadC, typename Store>
static void gemm(int transA, int transB, int m, int n, int k, float alpha, const T* A, int lda, const T* B, int ldb,
		 float beta, TC* C, int ldc, Load load, LoadC loadC, Store store) {
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			float s = 0;
			for (int p = 0; p < k; p++) {
				float a = load(transA ? A[p + (size_t)i * lda] : A[i + (size_t)p * lda]);
				float b = load(transB ? B[j + (size_t)p * ldb] : B[p + (size_t)j * ldb]);
				s += a * b;
			}
			TC& c = C[i + (size_t)j * ldc];
			c = store(beta == 0 ? alpha * s : alpha * s + beta * loadC(c));
		}
}

static float same(float v) { return v; }

static float widen_bf16(uint16_t h) {
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

// round_bf16 rounds to nearest-even, NaN staying a quiet NaN (as
// __float2bfloat16 and cuBLAS's bf16 store do).
static uint16_t round_bf16(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	if (f != f) return (uint16_t)((u | 0x00400000u) >> 16);
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

extern "C" void emu_gemm(int transA, int transB, int m, int n, int k, float alpha, const float* A, int lda,
			 const float* B, int ldb, float beta, float* C, int ldc) {
	gemm(transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, same, same, same);
}

extern "C" void emu_gemm_bf16(int transA, int transB, int m, int n, int k, float alpha, const uint16_t* A, int lda,
			      const uint16_t* B, int ldb, float beta, float* C, int ldc) {
	gemm(transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, widen_bf16, same, same);
}

extern "C" void emu_gemm_bf16c(int transA, int transB, int m, int n, int k, float alpha, const uint16_t* A, int lda,
			       const uint16_t* B, int ldb, float beta, uint16_t* C, int ldc) {
	gemm(transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, widen_bf16, widen_bf16, round_bf16);
}
