#include "shim.h"
#include "runtime.h"
#include "../cuda/lora.cu"

extern "C" void emu_register_lora(const char* prefix) {
	EMU_REG(lora_shrink_f32);
	EMU_REG(lora_expand_f32);
	EMU_REG(lora_expand_f32_ybf16);
	EMU_REG(lora_expand_backward_f32);
	EMU_REG(lora_expand_backward_f32_ybf16);
	EMU_REG(lora_shrink_backward_f32);
	EMU_REG(lora_shrink_backward_f32_dxbf16);
}
