#include "shim.h"
#include "runtime.h"
#include "../cuda/policy_loss.cu"

extern "C" void emu_register_policy_loss(const char* prefix) {
	EMU_REG(policy_loss_f32);
}
