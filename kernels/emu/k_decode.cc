#include "shim.h"
#include "runtime.h"
#include "../cuda/decode.cu"

extern "C" void emu_register_decode(const char* prefix) {
	EMU_REG(add_i32);
	EMU_REG(pcg_draw_f64);
}
