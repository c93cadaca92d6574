// Test-only variants, registered under the prefix "planted/": attention.cu
// and attention_flash.cu compiled with GRPO_PLANT_OFF_BY_ONE (drops the causal diagonal). The
// conformance suite must reject it (planted_test.go). Kernels have internal
// linkage under emu, so including attention.cu a second time is fine.
#define GRPO_PLANT_OFF_BY_ONE
#include "shim.h"
#include "runtime.h"
#include "../cuda/attention.cu"
#include "../cuda/attention_flash.cu"

extern "C" void emu_register_planted(const char* prefix) {
	EMU_REG(attention_f32);
	EMU_REG(attention_flash_hd16_bf16);
	EMU_REG(attention_flash_hd32_bf16);
	EMU_REG(attention_flash_hd64_bf16);
	EMU_REG(attention_flash_hd128_bf16);
	EMU_REG(attention_flash_hd16_f32);
	EMU_REG(attention_flash_hd32_f32);
	EMU_REG(attention_flash_hd64_f32);
	EMU_REG(attention_flash_hd128_f32);
}
