package emu

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// TestPrefillOverBF16CachesRunsTensorCores: an Attention with an f32 q
// over bf16 caches and more tokens than sequences (a prefill: the
// sampler's, whose caches are bf16 on a GPU) runs the tensor-core kernel
// on a bf16 copy of q (cuda.Backend.prefillOnTensorCores), and with f32
// caches (training's today) the f32 flash kernel still runs. The values
// are the conformance suite's to check (kerneltest's Attention cases with
// kv=bf16 take this path on emu).
func TestPrefillOverBF16CachesRunsTensorCores(t *testing.T) {
	_, _, d := backwardRun(t, kernels.BF16, kernels.F32)
	if d.ReadBytes("attention_flash_tc_hd64") == 0 {
		t.Error("f32 q over bf16 caches, 108 tokens of 3 sequences: attention_flash_tc_hd64 read nothing; the prefill did not take the tensor-core kernel")
	}
	_, _, d = backwardRun(t, kernels.F32, kernels.F32)
	if n := d.ReadBytes("attention_flash_tc_hd64"); n != 0 {
		t.Errorf("f32 caches: attention_flash_tc_hd64 read %d bytes; f32 caches have no tensor-core path", n)
	}
}
