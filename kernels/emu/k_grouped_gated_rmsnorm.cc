#include "shim.h"
#include "runtime.h"
#include "../cuda/grouped_gated_rmsnorm.cu"

extern "C" void emu_register_grouped_gated_rmsnorm(const char* prefix) {
	EMU_REG(grouped_gated_rmsnorm_f32);
	EMU_REG(grouped_gated_rmsnorm_wbf16);
	EMU_REG(grouped_gated_rmsnorm_backward_f32);
	EMU_REG(grouped_gated_rmsnorm_backward_wbf16);
	EMU_REG(grouped_gated_rmsnorm_as);
	EMU_REG(grouped_gated_rmsnorm_wbf16_as);
	EMU_REG(grouped_gated_rmsnorm_backward_as);
	EMU_REG(grouped_gated_rmsnorm_backward_wbf16_as);
}
