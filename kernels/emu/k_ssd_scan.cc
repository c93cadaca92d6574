#include "shim.h"
#include "runtime.h"
#include "../cuda/ssd_scan.cu"

extern "C" void emu_register_ssd_scan(const char* prefix) {
	EMU_REG(ssd_scan_f32);
	EMU_REG(ssd_scan_backward_f32);
	EMU_REG(ssd_scan_as);
	EMU_REG(ssd_scan_backward_as);
}
