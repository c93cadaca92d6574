#include "shim.h"
#include "runtime.h"
#include "../cuda/train_elementwise.cu"

extern "C" void emu_register_train_elementwise(const char* prefix) {
	EMU_REG(fill_f32);
	EMU_REG(scale_f32);
	EMU_REG(swiglu_backward_f32);
	EMU_REG(swiglu_backward_as);
	EMU_REG(sigmoid_gate_backward_f32);
	EMU_REG(sigmoid_gate_backward_as);
}
