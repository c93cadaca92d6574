// Test-only variant of a training kernel, registered under "planted/":
// attention_backward.cu compiled with GRPO_PLANT_NO_DELTA, so ds = p·dp
// without the softmax's −D term. The training suite must reject it
// (planted_test.go). A separate translation unit from k_planted.cc, so
// each planted macro reaches only the source it is meant for.
#define GRPO_PLANT_NO_DELTA
#include "shim.h"
#include "runtime.h"
#include "../cuda/attention_backward.cu"

extern "C" void emu_register_planted_train(const char* prefix) { EMU_REG(attention_backward_f32); }
