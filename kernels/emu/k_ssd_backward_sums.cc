#include "shim.h"
#include "runtime.h"
#include "../cuda/ssd_backward_sums.cu"

extern "C" void emu_register_ssd_backward_sums(const char* prefix) {
	EMU_REG(ssd_group_sum_f32);
	EMU_REG(ssd_group_sum_as);
	EMU_REG(ssd_init_sum_f32);
}
