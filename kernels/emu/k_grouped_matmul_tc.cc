#include "shim.h"
#include "runtime.h"
#include "../cuda/grouped_matmul_tc.cu"

extern "C" void emu_register_grouped_matmul_tc(const char* prefix) {
	EMU_REG(grouped_matmul_tc_bf16);
	EMU_REG(grouped_matmul_tc_bf16_abf16);
	EMU_REG(grouped_matmul_tc_bf16_cbf16);
	EMU_REG(grouped_matmul_tc_bf16_abf16_cbf16);
	EMU_REG(grouped_matmul_tc_mxfp4);
	EMU_REG(grouped_matmul_tc_mxfp4_abf16);
	EMU_REG(grouped_matmul_tc_mxfp4_cbf16);
	EMU_REG(grouped_matmul_tc_mxfp4_abf16_cbf16);
}
