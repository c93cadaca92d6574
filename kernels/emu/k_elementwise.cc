// Each k_<family>.cc compiles one kernels/cuda/<family>.cu under the shim
// and registers its kernels by name. Adding a kernel: add its EMU_REG line.
#include "shim.h"
#include "runtime.h"
#include "../cuda/elementwise.cu"

extern "C" void emu_register_elementwise(const char* prefix) {
	EMU_REG(add_f32);
	EMU_REG(add_bias_f32);
	EMU_REG(add_bias_bf16);
	EMU_REG(add_f32_f32_bf16);
	EMU_REG(add_f32_bf16_bf16);
	EMU_REG(add_bf16_f32_f32);
	EMU_REG(add_bf16_f32_bf16);
	EMU_REG(add_bf16_bf16_bf16);
	EMU_REG(add_bias_f32_xbf16);
	EMU_REG(add_bias_bf16_xbf16);
	EMU_REG(swiglu_f32);
	EMU_REG(swiglu_as);
	EMU_REG(sigmoid_gate_f32);
	EMU_REG(sigmoid_gate_as);
}
