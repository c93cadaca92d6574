#include "shim.h"
#include "runtime.h"
#include "../cuda/relu2.cu"

extern "C" void emu_register_relu2(const char* prefix) {
	EMU_REG(relu2_f32);
	EMU_REG(relu2_backward_f32);
	EMU_REG(relu2_as);
	EMU_REG(relu2_backward_as);
}
