#include "shim.h"
#include "runtime.h"
#include "../cuda/rmsnorm.cu"

extern "C" void emu_register_rmsnorm(const char* prefix) {
	EMU_REG(rmsnorm_f32);
	EMU_REG(rmsnorm_wbf16);
}
