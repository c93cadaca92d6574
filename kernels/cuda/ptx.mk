# Included by the top-level Makefile: the CUDA backend's build targets.

.PHONY: ptx ptx-check gpu-check

ptx: ## regenerate kernels/cuda/ptx from kernels/cuda/*.cu (needs nvcc: scripts/install-cuda.sh)
	kernels/cuda/ptx/build.sh

ptx-check: ## fail if the committed PTX differs from what nvcc makes of the .cu sources
	kernels/cuda/ptx/build.sh -check

gpu-check: ## build the cuda binaries here, for scripts/gpu-check.sh on a GPU machine
	bash scripts/gpu-check.sh build
