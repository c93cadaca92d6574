#include "shim.h"
#include "runtime.h"
#include "../cuda/sumsquares.cu"

extern "C" void emu_register_sumsquares(const char* prefix) {
	EMU_REG(sum_squares_partial_f32);
	EMU_REG(sum_squares_finish_f32);
}
