#include "shim.h"
#include "runtime.h"
#include "../cuda/delta_gates.cu"

extern "C" void emu_register_delta_gates(const char* prefix) {
	EMU_REG(delta_gates_f32);
	EMU_REG(delta_gates_wbf16);
	EMU_REG(delta_gates_backward_f32);
	EMU_REG(delta_gates_backward_wbf16);
}
