#include "shim.h"
#include "runtime.h"
#include "../cuda/rmsnorm_backward.cu"

extern "C" void emu_register_rmsnorm_backward(const char* prefix) {
	EMU_REG(rmsnorm_backward_f32);
	EMU_REG(rmsnorm_backward_wbf16);
	EMU_REG(rmsnorm_backward_f32_dybf16);
	EMU_REG(rmsnorm_backward_wbf16_dybf16);
}
