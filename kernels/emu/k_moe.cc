#include "shim.h"
#include "runtime.h"
#include "../cuda/moe.cu"

extern "C" void emu_register_moe(const char* prefix) {
	EMU_REG(moe_route_f32);
	EMU_REG(moe_route_backward_f32);
	EMU_REG(moe_route_sigmoid_f32);
	EMU_REG(moe_route_sigmoid_backward_f32);
	EMU_REG(moe_count_i32);
	EMU_REG(moe_place_i32);
	EMU_REG(grouped_matmul_f32);
	EMU_REG(grouped_matmul_f32_abf16);
	EMU_REG(grouped_matmul_f32_cbf16);
	EMU_REG(grouped_matmul_f32_abf16_cbf16);
	EMU_REG(grouped_matmul_tn_f32);
	EMU_REG(grouped_matmul_tn_f32_abf16);
	EMU_REG(grouped_matmul_tn_f32_bbf16);
	EMU_REG(grouped_matmul_tn_f32_abf16_bbf16);
	EMU_REG(moe_combine_f32);
	EMU_REG(moe_combine_backward_f32);
	EMU_REG(moe_combine_as);
	EMU_REG(moe_combine_backward_as);
}
