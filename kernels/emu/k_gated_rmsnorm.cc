#include "shim.h"
#include "runtime.h"
#include "../cuda/gated_rmsnorm.cu"

extern "C" void emu_register_gated_rmsnorm(const char* prefix) {
	EMU_REG(gated_rmsnorm_f32);
	EMU_REG(gated_rmsnorm_wbf16);
	EMU_REG(gated_rmsnorm_backward_f32);
	EMU_REG(gated_rmsnorm_backward_wbf16);
	EMU_REG(gated_rmsnorm_as);
	EMU_REG(gated_rmsnorm_wbf16_as);
	EMU_REG(gated_rmsnorm_backward_as);
	EMU_REG(gated_rmsnorm_backward_wbf16_as);
}
