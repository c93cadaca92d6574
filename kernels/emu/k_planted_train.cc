// Test-only variants of training kernels, registered under "planted/":
// attention_backward.cu, attention_flash_backward.cu and
// attention_flash_tc_backward.cu compiled with GRPO_PLANT_NO_DELTA, so ds = p·dp
// without the softmax's −D term. The training suite must reject it
// (planted_test.go). A separate translation unit from k_planted.cc, so
// each planted macro reaches only the source it is meant for.
#define GRPO_PLANT_NO_DELTA
#include "shim.h"
#include "runtime.h"
#include "../cuda/attention_backward.cu"
#include "../cuda/attention_flash_backward.cu"
#include "../cuda/attention_flash_tc_backward.cu"

extern "C" void emu_register_planted_train(const char* prefix) {
	EMU_REG(attention_backward_f32);
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
	EMU_REG(attention_flash_tc_dq_hd64);
	EMU_REG(attention_flash_tc_dq_hd128);
	EMU_REG(attention_flash_tc_dq_hd256);
	EMU_REG(attention_flash_tc_dkdv_hd64_dkdv);
	EMU_REG(attention_flash_tc_dkdv_hd128_dkdv);
	EMU_REG(attention_flash_tc_dkdv_hd256_dv);
	EMU_REG(attention_flash_tc_dkdv_hd256_dk);
}
