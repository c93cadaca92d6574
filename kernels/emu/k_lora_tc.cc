#include "shim.h"
#include "runtime.h"
#include "../cuda/lora_tc.cu"

extern "C" void emu_register_lora_tc(const char* prefix) {
	EMU_REG(lora_shrink_tc_xbf16);
	EMU_REG(lora_shrink_tc_xabf16);
	EMU_REG(lora_shrink_tc_bf16);
	EMU_REG(lora_expand_tc);
	EMU_REG(lora_expand_tc_ybf16);
	EMU_REG(lora_expand_backward_tc);
	EMU_REG(lora_expand_backward_tc_ybf16);
	EMU_REG(lora_shrink_backward_tc);
	EMU_REG(lora_shrink_backward_tc_dxbf16);
}
