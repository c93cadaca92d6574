#include "shim.h"
#include "runtime.h"
#include "../cuda/attention_flash_tc_backward.cu"

extern "C" void emu_register_attention_flash_tc_backward(const char* prefix) {
	EMU_REG(attention_flash_tc_dq_hd64);
	EMU_REG(attention_flash_tc_dq_hd128);
	EMU_REG(attention_flash_tc_dq_hd256);
	EMU_REG(attention_flash_tc_dkdv_hd64_dkdv);
	EMU_REG(attention_flash_tc_dkdv_hd128_dkdv);
	EMU_REG(attention_flash_tc_dkdv_hd256_dv);
	EMU_REG(attention_flash_tc_dkdv_hd256_dk);
}
