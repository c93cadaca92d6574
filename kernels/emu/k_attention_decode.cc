#include "shim.h"
#include "runtime.h"
#include "../cuda/attention_decode.cu"

extern "C" void emu_register_attention_decode(const char* prefix) {
	EMU_REG(attention_decode_dpl1_bf16);
	EMU_REG(attention_decode_dpl2_bf16);
	EMU_REG(attention_decode_dpl3_bf16);
	EMU_REG(attention_decode_dpl4_bf16);
	EMU_REG(attention_decode_dpl1_f32);
	EMU_REG(attention_decode_dpl2_f32);
	EMU_REG(attention_decode_dpl3_f32);
	EMU_REG(attention_decode_dpl4_f32);
	EMU_REG(attention_decode_combine);
	EMU_REG(attention_prefix_dpl1_bf16);
	EMU_REG(attention_prefix_dpl2_bf16);
	EMU_REG(attention_prefix_dpl3_bf16);
	EMU_REG(attention_prefix_dpl4_bf16);
	EMU_REG(attention_prefix_dpl1_f32);
	EMU_REG(attention_prefix_dpl2_f32);
	EMU_REG(attention_prefix_dpl3_f32);
	EMU_REG(attention_prefix_dpl4_f32);
	EMU_REG(attention_suffix_dpl1_bf16);
	EMU_REG(attention_suffix_dpl2_bf16);
	EMU_REG(attention_suffix_dpl3_bf16);
	EMU_REG(attention_suffix_dpl4_bf16);
	EMU_REG(attention_suffix_dpl1_f32);
	EMU_REG(attention_suffix_dpl2_f32);
	EMU_REG(attention_suffix_dpl3_f32);
	EMU_REG(attention_suffix_dpl4_f32);
}
