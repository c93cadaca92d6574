#include "shim.h"
#include "runtime.h"
#include "../cuda/attention_backward.cu"

extern "C" void emu_register_attention_backward(const char* prefix) {
	EMU_REG(attention_backward_f32);
}
