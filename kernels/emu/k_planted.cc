// Test-only variants, registered under the prefix "planted/": attention
// compiled with GRPO_PLANT_OFF_BY_ONE (drops the causal diagonal). The
// conformance suite must reject it (planted_test.go). Kernels have internal
// linkage under emu, so including attention.cu a second time is fine.
#define GRPO_PLANT_OFF_BY_ONE
#include "shim.h"
#include "runtime.h"
#include "../cuda/attention.cu"

extern "C" void emu_register_planted(const char* prefix) { EMU_REG(attention_f32); }
