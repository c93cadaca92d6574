#include "shim.h"
#include "runtime.h"
#include "../cuda/convert.cu"

extern "C" void emu_register_convert(const char* prefix) {
	EMU_REG(f32_to_bf16);
	EMU_REG(bf16_to_f32);
}
