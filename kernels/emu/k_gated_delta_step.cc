#include "shim.h"
#include "runtime.h"
#include "../cuda/gated_delta_step.cu"

extern "C" void emu_register_gated_delta_step(const char* prefix) {
	EMU_REG(gated_delta_step_f32);
	EMU_REG(gated_delta_step_as);
}
