#include "shim.h"
#include "runtime.h"
#include "../cuda/fused.cu"

extern "C" void emu_register_fused(const char* prefix) {
	EMU_REG(add_rmsnorm_f32);
	EMU_REG(add_rmsnorm_wbf16);
	EMU_REG(add_rmsnorm_f32_rbf16);
	EMU_REG(add_rmsnorm_wbf16_rbf16);
	EMU_REG(swiglu_rows_f32);
	EMU_REG(swiglu_rows_bf16);
	EMU_REG(swiglu_rows_backward_f32);
	EMU_REG(swiglu_rows_backward_f32_dbf16);
	EMU_REG(swiglu_rows_backward_f32_dybf16);
	EMU_REG(swiglu_rows_backward_f32_gubf16);
	EMU_REG(swiglu_rows_backward_f32_dbf16_dybf16);
	EMU_REG(swiglu_rows_backward_f32_dbf16_gubf16);
	EMU_REG(swiglu_rows_backward_f32_dybf16_gubf16);
	EMU_REG(swiglu_rows_backward_f32_dbf16_dybf16_gubf16);
	EMU_REG(attention_inputs_f32);
	EMU_REG(attention_inputs_wbf16);
	EMU_REG(attention_inputs_f32_kvbf16);
	EMU_REG(attention_inputs_wbf16_kvbf16);
	EMU_REG(attention_inputs_f32_kvbf16_qbf16);
	EMU_REG(attention_inputs_wbf16_kvbf16_qbf16);
	EMU_REG(attention_inputs_backward_f32);
	EMU_REG(attention_inputs_backward_wbf16);
}
