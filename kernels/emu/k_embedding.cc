#include "shim.h"
#include "runtime.h"
#include "../cuda/embedding.cu"

extern "C" void emu_register_embedding(const char* prefix) {
	EMU_REG(gather_rows_f32);
	EMU_REG(gather_rows_bf16);
	EMU_REG(gather_rows_as);
	EMU_REG(kv_write_f32);
	EMU_REG(kv_write_bf16);
}
