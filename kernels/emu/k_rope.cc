#include "shim.h"
#include "runtime.h"
#include "../cuda/rope.cu"

extern "C" void emu_register_rope(const char* prefix) { EMU_REG(rope_f32); }
