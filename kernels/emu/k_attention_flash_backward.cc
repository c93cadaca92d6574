#include "shim.h"
#include "runtime.h"
#include "../cuda/attention_flash_backward.cu"

extern "C" void emu_register_attention_flash_backward(const char* prefix) {
	EMU_REG(attention_flash_dkdv_hd16_bf16);
	EMU_REG(attention_flash_dkdv_hd32_bf16);
	EMU_REG(attention_flash_dkdv_hd64_bf16);
	EMU_REG(attention_flash_dkdv_hd128_bf16);
	EMU_REG(attention_flash_dkdv_hd16_f32);
	EMU_REG(attention_flash_dkdv_hd32_f32);
	EMU_REG(attention_flash_dkdv_hd64_f32);
	EMU_REG(attention_flash_dkdv_hd128_f32);
	EMU_REG(attention_flash_dq_hd16_bf16);
	EMU_REG(attention_flash_dq_hd32_bf16);
	EMU_REG(attention_flash_dq_hd64_bf16);
	EMU_REG(attention_flash_dq_hd128_bf16);
	EMU_REG(attention_flash_dq_hd16_f32);
	EMU_REG(attention_flash_dq_hd32_f32);
	EMU_REG(attention_flash_dq_hd64_f32);
	EMU_REG(attention_flash_dq_hd128_f32);
}
