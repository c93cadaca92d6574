package emu

import "fmt"

// The planted kernels (k_planted*.cc) are the real .cu sources compiled
// with one bug each. Swapping them in proves that a check can fail: the
// conformance suites here, the full-model check in internal/modeltest.

// PlantAttentionOffByOne swaps in the off-by-one variants of every
// forward kernel built from attention.cu and attention_flash.cu
// (k_planted.cc): each token attends to the positions before its own but
// not to itself.
func (d *Device) PlantAttentionOffByOne() {
	d.Substitute("attention_f32", "planted/attention_f32")
	for _, kv := range []string{"bf16", "f32"} {
		for _, hd := range []int{16, 32, 64, 128} {
			n := fmt.Sprintf("attention_flash_hd%d_%s", hd, kv)
			d.Substitute(n, "planted/"+n)
		}
	}
}

// PlantAttentionBackwardWithoutD swaps in the no-D variants of every
// attention backward kernel (k_planted_train.cc): ds = p·dp, without the
// −p·D term of the softmax Jacobian.
func (d *Device) PlantAttentionBackwardWithoutD() {
	d.Substitute("attention_backward_f32", "planted/attention_backward_f32")
	for _, pass := range []string{"dkdv", "dq"} {
		for _, kv := range []string{"bf16", "f32"} {
			for _, hd := range []int{16, 32, 64, 128} {
				n := fmt.Sprintf("attention_flash_%s_hd%d_%s", pass, hd, kv)
				d.Substitute(n, "planted/"+n)
			}
		}
	}
	for _, n := range []string{"dq_hd64", "dq_hd128", "dq_hd256", "dkdv_hd64_dkdv", "dkdv_hd128_dkdv", "dkdv_hd256_dv", "dkdv_hd256_dk"} {
		d.Substitute("attention_flash_tc_"+n, "planted/attention_flash_tc_"+n)
	}
}
