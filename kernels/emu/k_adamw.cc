#include "shim.h"
#include "runtime.h"
#include "../cuda/adamw.cu"

extern "C" void emu_register_adamw(const char* prefix) {
	EMU_REG(adamw_f32);
}
