#include "shim.h"
#include "runtime.h"
#include "../cuda/advantages.cu"

extern "C" void emu_register_advantages(const char* prefix) {
	EMU_REG(batch_std_f64);
	EMU_REG(group_advantages_f32);
}
