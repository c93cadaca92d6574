#include "shim.h"
#include "runtime.h"
#include "../cuda/scatter.cu"

extern "C" void emu_register_scatter(const char* prefix) {
	EMU_REG(scatter_rows_f32);
	EMU_REG(scatter_rows_bf16);
}
