#include "shim.h"
#include "runtime.h"
#include "../cuda/ssd_chunked.cu"

extern "C" void emu_register_ssd_chunked(const char* prefix) {
	EMU_REG(ssd_chunked_f32);
	EMU_REG(ssd_chunked_as);
}
