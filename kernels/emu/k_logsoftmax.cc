#include "shim.h"
#include "runtime.h"
#include "../cuda/logsoftmax.cu"

extern "C" void emu_register_logsoftmax(const char* prefix) { EMU_REG(log_softmax_gather_f32); }
