package emu

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// TestConformance runs every kernel of kernels/cuda, through the Go CUDA
// backend, under the emulator against the suite's float64 references.
func TestConformance(t *testing.T) {
	b := New()
	defer b.Close()
	kerneltest.Run(t, b)
}

// TestTrainConformance runs the training ops (kernels.TrainOps) of
// kernels/cuda under the emulator against the training suite's float64
// references and finite differences of the backend's own forward ops.
func TestTrainConformance(t *testing.T) {
	b := New()
	defer b.Close()
	kerneltest.RunTrain(t, b)
}

// TestSampleConformance runs sample_f32 (kernels/cuda/sampling.cu) through
// the backend's Sample under the emulator against kerneltest.RefSample:
// every token exact, per-row parameters, rows up to 151,936 wide.
func TestSampleConformance(t *testing.T) {
	b := New()
	defer b.Close()
	kerneltest.RunSample(t, b)
}
