#include "shim.h"
#include "runtime.h"
#include "../cuda/gated_delta_l2_backward.cu"

extern "C" void emu_register_gated_delta_l2_backward(const char* prefix) {
	EMU_REG(gated_delta_l2_backward_f32);
	EMU_REG(gated_delta_l2_backward_as);
}
