// lora.cuh: the parts of a LoRA launch, shared by lora.cu (f32 kernels)
// and lora_tc.cu (tensor cores).
#pragma once

// Up to three parts per launch (q/k/v), passed by value: the part of a
// block is blockIdx.z (expand) or derived from blockIdx.x (backward).
struct lora_part {
	const float* b;  // out × rank
	float* db;       // out × rank, or null
	float* y;        // rows × y_cols, the part's columns from y_off
	int rank, out, y_cols, y_off, xa_off;
	float scale;
};
#define LORA_PART_PARAMS(n)                                                                                          \
	const float *b##n, float *db##n, float *y##n, int rank##n, int out##n, int y_cols##n, int y_off##n, int xa_off##n, \
		float scale##n
#define LORA_PICK(z)                                                                                                            \
	lora_part p = (z) == 0 ? lora_part{b0, db0, y0, rank0, out0, y_cols0, y_off0, xa_off0, scale0}                              \
		      : (z) == 1 ? lora_part{b1, db1, y1, rank1, out1, y_cols1, y_off1, xa_off1, scale1}                            \
				 : lora_part{b2, db2, y2, rank2, out2, y_cols2, y_off2, xa_off2, scale2}
