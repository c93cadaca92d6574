// Test-only: add_f32 compiled with GRPO_PLANT_OOB reads a[n] and b[n], one
// element past the end of its operands, registered as "planted-oob/add_f32".
// Without AddressSanitizer the read goes unnoticed (it lands in the heap);
// the ASan job must report it, naming add_f32 (asan_test.go).
#define GRPO_PLANT_OOB
#include "shim.h"
#include "runtime.h"
#include "../cuda/elementwise.cu"

extern "C" void emu_register_planted_oob(const char* prefix) { EMU_REG(add_f32); }
