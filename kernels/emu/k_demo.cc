// Test-only kernels exercising the emulator itself (emu_test.go): a block
// reduction through shared memory, the same with one __syncthreads missing,
// the warp intrinsics, atomics across blocks, a divergent barrier, the
// wmma emulation (demo_wmma.cuh).
#include "shim.h"
#include "runtime.h"
#include "demo_kernels.cuh"
#include "demo_wmma.cuh"
#include "demo_mma.cuh"

extern "C" void emu_register_demo(const char* prefix) {
	EMU_REG(demo_block_sum);
	EMU_REG(demo_block_sum_missing_sync);
	EMU_REG(demo_shuffles);
	EMU_REG(demo_atomic_count);
	EMU_REG(demo_arrival_order);
	EMU_REG(demo_divergent_barrier);
	EMU_REG(demo_warp_block_sum);
	EMU_REG(demo_static_shared_first_read);
	EMU_REG(demo_math);
	EMU_REG(demo_wmma_16x16x16_rr);
	EMU_REG(demo_wmma_16x16x16_rc);
	EMU_REG(demo_wmma_16x16x16_cr);
	EMU_REG(demo_wmma_16x16x16_cc);
	EMU_REG(demo_wmma_32x8x16_rc);
	EMU_REG(demo_wmma_8x32x16_rr);
	EMU_REG(demo_wmma_layout);
	EMU_REG(demo_wmma_divergent);
	EMU_REG(demo_wmma_misaligned);
	EMU_REG(demo_mma_16x8x16);
	EMU_REG(demo_cp_async);
}
