// Test-only variants, registered under the prefix "planted/":
// attention_decode.cu compiled with GRPO_PLANT_WRONG_PREFIX_ROW, whose
// prefix pass reads every group's shared blocks through the first token's
// table row. The shared-prefix conformance cases must reject it
// (planted_test.go).
#define GRPO_PLANT_WRONG_PREFIX_ROW
#include "shim.h"
#include "runtime.h"
#include "../cuda/attention_decode.cu"

extern "C" void emu_register_planted_prefix(const char* prefix) {
	EMU_REG(attention_prefix_dpl1_bf16);
	EMU_REG(attention_prefix_dpl2_bf16);
	EMU_REG(attention_prefix_dpl3_bf16);
	EMU_REG(attention_prefix_dpl4_bf16);
	EMU_REG(attention_prefix_dpl1_f32);
	EMU_REG(attention_prefix_dpl2_f32);
	EMU_REG(attention_prefix_dpl3_f32);
	EMU_REG(attention_prefix_dpl4_f32);
}
