#include "shim.h"
#include "runtime.h"
#include "../cuda/ssd_chunked_backward.cu"

extern "C" void emu_register_ssd_chunked_backward(const char* prefix) {
	EMU_REG(ssd_chunked_backward_f32);
	EMU_REG(ssd_chunked_backward_as);
}
