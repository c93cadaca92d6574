package perf

// Peaks of an H200 SXM (NVIDIA's datasheet): dense BF16 tensor-core
// throughput (what a bf16 checkpoint's GEMMs run at: cublasGemmEx with bf16
// operands), plain FP32 (CUDA cores: what cuBLAS Sgemm without TF32 runs on,
// the ceiling of an f32 model such as a random-init --shape), and HBM3e
// bandwidth. The bench reports its figures against these so a GPU number
// reads as a fraction of what the hardware can do, not as a bare rate.
const (
	H200BF16FLOPs = 989e12
	H200FP32FLOPs = 67e12
	H200HBMBytes  = 4.8e12
)

// Ceilings this workplace measured on its H200 (gpu-check): a
// device-to-device copy at 4.3 TB/s and bf16 GEMMs on random data at
// 769–798 TFLOP/s. The best of them is what the hardware has shown it
// can do, so it bounds a decode step as the datasheet does.
const (
	H200MeasuredHBMBytes  = 4.3e12
	H200MeasuredBF16FLOPs = 798e12
)

// RooflineSeconds is the least time a step can take: its bytes at the
// bandwidth or its FLOPs at the peak, whichever is longer.
func RooflineSeconds(bytes, flops, bandwidth, peak float64) float64 {
	return max(bytes/bandwidth, flops/peak)
}
