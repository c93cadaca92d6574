// Test-only kernels exercising the emulator itself (emu_test.go): a block
// reduction through shared memory, the same with one __syncthreads missing,
// the warp intrinsics, atomics across blocks, a divergent barrier.
#include "shim.h"
#include "runtime.h"
#include "demo_kernels.cuh"

extern "C" void emu_register_demo(const char* prefix) {
	EMU_REG(demo_block_sum);
	EMU_REG(demo_block_sum_missing_sync);
	EMU_REG(demo_shuffles);
	EMU_REG(demo_atomic_count);
	EMU_REG(demo_divergent_barrier);
	EMU_REG(demo_warp_block_sum);
	EMU_REG(demo_static_shared_first_read);
	EMU_REG(demo_math);
}
