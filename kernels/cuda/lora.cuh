// lora.cuh: the parts of a LoRA launch, shared by lora.cu (f32 kernels)
// and lora_tc.cu (tensor cores).
#pragma once

// Up to three parts per launch (q/k/v), passed by value: the part of a
// block is blockIdx.z (expand) or derived from blockIdx.x (backward). Y is
// the parts' output (or output-gradient) type, float or __nv_bfloat16, one
// for every part of a launch: the kernels are templates over it,
// instantiated once per dtype under an extern "C" name.
template <class Y>
struct lora_part {
	const float* b;  // out × rank
	float* db;       // out × rank, or null
	Y* y;            // rows × y_cols, the part's columns from y_off
	int rank, out, y_cols, y_off, xa_off;
	float scale;
};
#define LORA_PART_PARAMS_Y(n, Y)                                                                                \
	const float *b##n, float *db##n, Y *y##n, int rank##n, int out##n, int y_cols##n, int y_off##n, int xa_off##n, \
		float scale##n
#define LORA_PART_PARAMS(n) LORA_PART_PARAMS_Y(n, float)
// LORA_PARTS_Y(Y) declares the three parts' parameters; LORA_PART_ARGS
// passes them on, from an extern "C" kernel to the template that does its
// work.
#define LORA_PARTS_Y(Y) LORA_PART_PARAMS_Y(0, Y), LORA_PART_PARAMS_Y(1, Y), LORA_PART_PARAMS_Y(2, Y)
#define LORA_PART_ARGS_N(n) b##n, db##n, y##n, rank##n, out##n, y_cols##n, y_off##n, xa_off##n, scale##n
#define LORA_PART_ARGS LORA_PART_ARGS_N(0), LORA_PART_ARGS_N(1), LORA_PART_ARGS_N(2)
#define LORA_PICK(z)                                                                                                  \
	lora_part<Y> p = (z) == 0 ? lora_part<Y>{b0, db0, y0, rank0, out0, y_cols0, y_off0, xa_off0, scale0}              \
			: (z) == 1 ? lora_part<Y>{b1, db1, y1, rank1, out1, y_cols1, y_off1, xa_off1, scale1}                 \
				   : lora_part<Y>{b2, db2, y2, rank2, out2, y_cols2, y_off2, xa_off2, scale2}

// st stores an f32 result into a float or bf16 output, rounding to
// nearest-even once, at the store.
__device__ __forceinline__ void st(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16(v); }
