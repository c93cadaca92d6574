package cuda

import "fmt"

// cublasStatusNames are cublasStatus_t's values (cublas_api.h), each
// with what it most likely means for grpo's calls, so an error says more
// than a number.
var cublasStatusNames = map[int]string{
	0:  "CUBLAS_STATUS_SUCCESS",
	1:  "CUBLAS_STATUS_NOT_INITIALIZED (cuBLAS could not start: no context, or the driver and cuBLAS disagree)",
	3:  "CUBLAS_STATUS_ALLOC_FAILED (cuBLAS could not allocate its workspace: the GPU's memory is full)",
	7:  "CUBLAS_STATUS_INVALID_VALUE (a size, leading dimension or pointer the call refuses)",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH (the GPU lacks what the call needs: bf16 GEMMs need sm_80 or newer)",
	11: "CUBLAS_STATUS_MAPPING_ERROR (device memory could not be accessed)",
	13: "CUBLAS_STATUS_EXECUTION_FAILED (the GEMM kernel failed to run; an earlier fault may have poisoned the context)",
	14: "CUBLAS_STATUS_INTERNAL_ERROR (inside cuBLAS, often an earlier CUDA error surfacing)",
	15: "CUBLAS_STATUS_NOT_SUPPORTED (this combination of types, layout and compute type)",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// cublasStatus names a cublasStatus_t for an error message.
func cublasStatus(st int) string {
	if s, ok := cublasStatusNames[st]; ok {
		return s
	}
	return fmt.Sprintf("cuBLAS status %d (not one cublas_api.h of CUDA 11.8–13 defines)", st)
}
