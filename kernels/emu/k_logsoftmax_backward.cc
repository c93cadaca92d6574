#include "shim.h"
#include "runtime.h"
#include "../cuda/logsoftmax_backward.cu"

extern "C" void emu_register_logsoftmax_backward(const char* prefix) {
	EMU_REG(log_softmax_gather_backward_f32);
	EMU_REG(log_softmax_gather_backward_bf16);
}
