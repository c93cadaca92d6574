#include "shim.h"
#include "runtime.h"
#include "../cuda/sampling.cu"

extern "C" void emu_register_sampling(const char* prefix) { EMU_REG(sample_f32); }
