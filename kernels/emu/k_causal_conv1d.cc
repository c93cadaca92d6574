#include "shim.h"
#include "runtime.h"
#include "../cuda/causal_conv1d.cu"

extern "C" void emu_register_causal_conv1d(const char* prefix) {
	EMU_REG(causal_conv1d_f32);
	EMU_REG(causal_conv1d_wbf16);
	EMU_REG(causal_conv1d_backward_f32);
	EMU_REG(causal_conv1d_backward_wbf16);
	EMU_REG(causal_conv1d_as);
	EMU_REG(causal_conv1d_wbf16_as);
	EMU_REG(causal_conv1d_backward_as);
	EMU_REG(causal_conv1d_backward_wbf16_as);
}
