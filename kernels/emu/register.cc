// register.cc: the one list of kernel families. A new kernels/cuda/<f>.cu
// gets a k_<f>.cc beside this file and a line here.
#include <mutex>

#include "runtime.h"

extern "C" {
void emu_register_elementwise(const char* prefix);
void emu_register_convert(const char* prefix);
void emu_register_embedding(const char* prefix);
void emu_register_scatter(const char* prefix);
void emu_register_columns(const char* prefix);
void emu_register_rmsnorm(const char* prefix);
void emu_register_rope(const char* prefix);
void emu_register_attention(const char* prefix);
void emu_register_logsoftmax(const char* prefix);
void emu_register_train_elementwise(const char* prefix);
void emu_register_adamw(const char* prefix);
void emu_register_sumsquares(const char* prefix);
void emu_register_rmsnorm_backward(const char* prefix);
void emu_register_logsoftmax_backward(const char* prefix);
void emu_register_policy_loss(const char* prefix);
void emu_register_attention_backward(const char* prefix);
void emu_register_attention_flash(const char* prefix);
void emu_register_attention_flash_backward(const char* prefix);
void emu_register_attention_flash_tc(const char* prefix);
void emu_register_attention_flash_tc_backward(const char* prefix);
void emu_register_attention_decode(const char* prefix);
void emu_register_sampling(const char* prefix);
void emu_register_decode(const char* prefix);
void emu_register_fused(const char* prefix);
void emu_register_lora(const char* prefix);
void emu_register_lora_tc(const char* prefix);
void emu_register_moe(const char* prefix);
void emu_register_moe_glu(const char* prefix);
void emu_register_grouped_matmul_tc(const char* prefix);
void emu_register_causal_conv1d(const char* prefix);
void emu_register_delta_gates(const char* prefix);
void emu_register_gated_rmsnorm(const char* prefix);
void emu_register_gated_delta_step(const char* prefix);
void emu_register_gated_delta_chunked(const char* prefix);
void emu_register_gated_delta_chunked_backward(const char* prefix);
void emu_register_gated_delta_l2_backward(const char* prefix);
void emu_register_ssd_scan(const char* prefix);
void emu_register_ssd_chunked(const char* prefix);
void emu_register_ssd_chunked_backward(const char* prefix);
void emu_register_ssd_backward_sums(const char* prefix);
void emu_register_grouped_gated_rmsnorm(const char* prefix);
void emu_register_relu2(const char* prefix);
void emu_register_planted(const char* prefix);
void emu_register_planted_train(const char* prefix);
void emu_register_planted_oob(const char* prefix);
void emu_register_planted_prefix(const char* prefix);
void emu_register_demo(const char* prefix);
}

extern "C" void emu_register_all(void) {
	static std::once_flag once;
	std::call_once(once, [] {
		emu_register_elementwise("");
		emu_register_convert("");
		emu_register_embedding("");
		emu_register_scatter("");
		emu_register_columns("");
		emu_register_rmsnorm("");
		emu_register_rope("");
		emu_register_attention("");
		emu_register_logsoftmax("");
		emu_register_train_elementwise("");
		emu_register_adamw("");
		emu_register_sumsquares("");
		emu_register_rmsnorm_backward("");
		emu_register_logsoftmax_backward("");
		emu_register_policy_loss("");
		emu_register_attention_backward("");
		emu_register_attention_flash("");
		emu_register_attention_flash_backward("");
		emu_register_attention_flash_tc("");
		emu_register_attention_flash_tc_backward("");
		emu_register_attention_decode("");
		emu_register_sampling("");
		emu_register_decode("");
		emu_register_fused("");
		emu_register_lora("");
		emu_register_lora_tc("");
		emu_register_moe("");
		emu_register_moe_glu("");
		emu_register_grouped_matmul_tc("");
		emu_register_causal_conv1d("");
		emu_register_delta_gates("");
		emu_register_gated_rmsnorm("");
		emu_register_gated_delta_step("");
		emu_register_gated_delta_chunked("");
		emu_register_gated_delta_chunked_backward("");
		emu_register_gated_delta_l2_backward("");
		emu_register_ssd_scan("");
		emu_register_ssd_chunked("");
		emu_register_ssd_chunked_backward("");
		emu_register_ssd_backward_sums("");
		emu_register_grouped_gated_rmsnorm("");
		emu_register_relu2("");
		emu_register_planted("planted/");
		emu_register_planted_train("planted/");
		emu_register_planted_oob("planted-oob/");
		emu_register_planted_prefix("planted/");
		emu_register_demo("demo/");
	});
}
