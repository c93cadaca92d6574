#include "shim.h"
#include "runtime.h"
#include "../cuda/attention_flash_tc.cu"

extern "C" void emu_register_attention_flash_tc(const char* prefix) {
	EMU_REG(attention_flash_tc_hd64);
	EMU_REG(attention_flash_tc_hd128);
	EMU_REG(attention_flash_tc_hd256);
}
