#include "shim.h"
#include "runtime.h"
#include "../cuda/moe_glu.cu"

extern "C" void emu_register_moe_glu(const char* prefix) {
	EMU_REG(clamped_swiglu_f32);
	EMU_REG(clamped_swiglu_backward_f32);
	EMU_REG(grouped_add_bias_f32);
	EMU_REG(clamped_swiglu_as);
	EMU_REG(clamped_swiglu_backward_as);
	EMU_REG(grouped_add_bias_ybf16);
}
