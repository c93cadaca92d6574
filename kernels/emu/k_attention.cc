#include "shim.h"
#include "runtime.h"
#include "../cuda/attention.cu"

extern "C" void emu_register_attention(const char* prefix) {
	EMU_REG(attention_f32);
	EMU_REG(attention_bf16);
}
