// Package cuda owns the CUDA backend of kernels.Backend: the kernel sources
// (*.cu, compiled to the PTX under ptx/), and the Go logic that drives them
// — buffer handling, launch configurations, op sequencing, scratch memory,
// transfers staged through pinned host buffers and ordered by events.
//
// That logic is written once against Device, a small interface over a
// CUDA-like device (alloc, pinned host memory, async copies on one stream,
// events, launch a kernel by name, f32 and bf16 GEMMs). Two
// devices implement it: the real one (build tag cuda: gorgonia.org/cu, the
// embedded PTX and a small cuBLAS binding, registered as backend "cuda"),
// and kernels/emu, which runs the same .cu files on the CPU under an
// emulation of the CUDA execution model (registered as "emu", always built,
// and what `go test ./...` checks against the CPU reference). So CI covers
// everything but the driver itself.
//
// See CUDA.md at the repository root for the kernels, their launch
// configurations and how to add one.
package cuda
