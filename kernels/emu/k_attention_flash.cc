#include "shim.h"
#include "runtime.h"
#include "../cuda/attention_flash.cu"

extern "C" void emu_register_attention_flash(const char* prefix) {
	EMU_REG(attention_flash_hd16_bf16);
	EMU_REG(attention_flash_hd32_bf16);
	EMU_REG(attention_flash_hd64_bf16);
	EMU_REG(attention_flash_hd128_bf16);
	EMU_REG(attention_flash_hd16_f32);
	EMU_REG(attention_flash_hd32_f32);
	EMU_REG(attention_flash_hd64_f32);
	EMU_REG(attention_flash_hd128_f32);
}
