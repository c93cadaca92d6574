#include "shim.h"
#include "runtime.h"
#include "../cuda/columns.cu"

extern "C" void emu_register_columns(const char* prefix) {
	EMU_REG(copy_columns_f32);
	EMU_REG(copy_columns_as);
}
