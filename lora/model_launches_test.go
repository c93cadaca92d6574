package lora_test

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// The model with an adapter attached, on the emulated device: these tests
// live here, not in model or kernels/emu, because tests follow the
// dependency arrows and only lora and what is above it may import lora.

// countingDevice counts the kernel launches and GEMMs issued to an
// emulated device, by kernel name.
type countingDevice struct {
	*emu.Device
	counting bool
	launches map[string]int
}

func (d *countingDevice) count(name string) {
	if d.counting {
		d.launches[name]++
	}
}

func (d *countingDevice) Launch(name string, grid, block cuda.Dim3, shared int, args ...any) error {
	d.count(name)
	return d.Device.Launch(name, grid, block, shared, args...)
}

func (d *countingDevice) Sgemm(tA, tB bool, m, n, k int, alpha float32, a cuda.DevicePtr, lda int, b cuda.DevicePtr, ldb int, beta float32, c cuda.DevicePtr, ldc int) error {
	d.count("sgemm")
	return d.Device.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (d *countingDevice) GemmBF16(tA, tB bool, m, n, k int, alpha float32, a cuda.DevicePtr, lda int, b cuda.DevicePtr, ldb int, beta float32, c cuda.DevicePtr, ldc int) error {
	d.count("gemm_bf16")
	return d.Device.GemmBF16(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// GemmBF16C (a bf16 C: a bf16 trace's activations, model/trace_acts.go)
// counts as the bf16 GEMM it is.
func (d *countingDevice) GemmBF16C(tA, tB bool, m, n, k int, alpha float32, a cuda.DevicePtr, lda int, b cuda.DevicePtr, ldb int, beta float32, c cuda.DevicePtr, ldc int) error {
	d.count("gemm_bf16")
	return d.Device.GemmBF16C(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// total is the sum of the counts.
func (d *countingDevice) total() int {
	n := 0
	for _, c := range d.launches {
		n += c
	}
	return n
}

func (d *countingDevice) String() string {
	var names []string
	for k := range d.launches {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, " %s=%d", k, d.launches[k])
	}
	return b.String()
}

// launchModel loads the bf16 tiny Qwen3 (2 layers, q/k norm) on a counting
// emulated device with a LoRA adapter on all seven projections.
func launchModel(t *testing.T) (*model.Model, *countingDevice) {
	t.Helper()
	d := &countingDevice{Device: emu.NewDevice(), launches: map[string]int{}}
	be := cuda.New(d)
	t.Cleanup(func() { be.Close() })
	m, err := model.Load("../testdata/models/qwen3-tiny-bf16", be)
	if err != nil {
		t.Fatal(err)
	}
	ad, err := lora.New(m, lora.DefaultConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ad.Free)
	return m.WithAdapter(ad), d
}

// TestDecodeStepLaunches counts the launches (kernels and GEMMs) of one
// decode step — 4 sequences, one token each — of the tiny bf16 Qwen3 with
// LoRA on every projection.
func TestDecodeStepLaunches(t *testing.T) {
	m, d := launchModel(t)
	const seqs = 4
	cache := m.NewKVCache(seqs, 8)
	defer cache.Free()
	var pre, step model.Batch
	for s := range seqs {
		pre.Add(s, 0, 5, 6, int32(7+s))
		step.Add(s, 3, int32(9+s))
	}
	if _, err := m.Logits(cache, &pre, nil); err != nil {
		t.Fatal(err)
	}
	d.counting = true
	if _, err := m.Logits(cache, &step, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("decode step, %d layers: %d launches:%v", m.Config.NumLayers, d.total(), d)
	// The contiguous cache is bf16 (the trace's attention dtype), so the
	// step keeps the activations between ops in bf16 (model's
	// forwardAttention). Per layer: the two norms each fused with the
	// residual add before them (reading the bf16 o_proj or down_proj
	// output; layer 0's first adds nothing) and storing only their bf16
	// copy, the four base GEMMs reading them or the bf16 attention output
	// and writing bf16, one LoRA shrink per group and per single
	// projection on the tensor-core kernel (every input bf16) and one
	// expand into the bf16 output, SwiGLU on the bf16 gate/up output,
	// AttentionInputs (q/k norm, RoPE and the KV writes, q in bf16) and
	// the tensor-core attention: 17, no cast. With the f32 scoring cache
	// before this step made 39 launches (18 per layer: 2 casts, 2 f32
	// LoRA shrinks, the split-KV decode attention), and 77 before the
	// fused ops (commit c266c66): 36 per layer (4 norms, 4 casts, 4 base
	// GEMMs, 5 split copies, 11 LoRA sgemms, 2 adds, SwiGLU, 2 RoPE, 2 KV
	// writes, attention) and 5 once.
	rest := map[string]int{"add_rmsnorm_wbf16_rbf16": 2, "gemm_bf16": 4, "attention_inputs_wbf16_kvbf16_qbf16": 1,
		"attention_flash_tc_hd64": 1, "lora_shrink_tc_xbf16": 4, "lora_expand_f32_ybf16": 4, "swiglu_rows_bf16": 1}
	first := maps.Clone(rest)
	first["add_rmsnorm_wbf16"], first["add_rmsnorm_wbf16_rbf16"] = 1, 1
	// Once per step: the embedding, the final norm with the last layer's
	// residual add fused in (every token is a logit row) and the LM head.
	once := map[string]int{"gather_rows_bf16": 1, "add_rmsnorm_wbf16_rbf16": 1, "gemm_bf16": 1}
	checkLaunches(t, d, m.Config.NumLayers, first, rest, once)
	if got := d.total(); got != 37 || m.Config.NumLayers != 2 {
		t.Errorf("%d launches over %d layers, want 37 over 2 (39 with the f32 scoring cache, 77 before the fused ops)", got, m.Config.NumLayers)
	}
}

// checkLaunches compares d's counts with first (layer 0's launches), rest
// (every other layer's) and once.
func checkLaunches(t *testing.T, d *countingDevice, layers int, first, rest, once map[string]int) {
	t.Helper()
	want := map[string]int{}
	for k, v := range once {
		want[k] += v
	}
	for l := range layers {
		per := rest
		if l == 0 {
			per = first
		}
		for k, v := range per {
			want[k] += v
		}
	}
	for k := range want {
		if d.launches[k] != want[k] {
			t.Errorf("%s: %d launches, want %d", k, d.launches[k], want[k])
		}
	}
	for k, v := range d.launches {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %d launches, want none", k, v)
		}
	}
}

// TestTrainMicroBatchLaunches counts the launches of one training forward
// and backward (2 sequences of 5 tokens, every token scored).
func TestTrainMicroBatchLaunches(t *testing.T) {
	m, d := launchModel(t)
	var b model.Batch
	b.Add(0, 0, 5, 6, 7, 8, 9)
	b.Add(1, 0, 10, 11, 12, 13, 14)
	targets := []int32{6, 7, 8, 9, 1, 11, 12, 13, 14, 1}
	d.counting = true
	tr, err := m.ForwardTrain(&b, nil, targets)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	dlogp := m.Backend.Alloc(kernels.F32, tr.Rows())
	defer m.Backend.Free(dlogp)
	m.Backend.Fill(dlogp, 1, tr.Rows())
	if err := tr.Backward(dlogp); err != nil {
		t.Fatal(err)
	}
	t.Logf("train micro-batch, %d layers: %d launches:%v", m.Config.NumLayers, d.total(), d)
	// The forward as in a decode step; the backward per layer:
	// AttentionInputsBackward (the k/v rows of the cache gradients, RoPE's
	// and the q/k norms' backward, into the fused q/k/v layout), whose
	// base input gradient is then one GEMM with the fused weight (none in
	// layer 0, whose input is the frozen embedding), SwiGLU's on the fused
	// gate/up, whose base input gradient is one GEMM too, o_proj's and
	// down_proj's; per LoRA unit (group or single projection) one
	// LoRAExpandBackward (dxa and dB) and one LoRAShrinkBackward (dx and
	// dA), no sgemm; attention is the tensor-core flash forward and its
	// backward's two passes (dQ; dK and dV) over the bf16 q AttentionInputs
	// writes and the bf16 cache (a bf16 model's trace: model's
	// traceAttention); the head's gradient in bf16, which its GEMM reads
	// without a cast. A bf16 trace keeps the activations between ops in
	// bf16 (model's trace_acts.go): the norms write only their bf16
	// output, the GEMMs write bf16 and read bf16 (no cast launches: 9
	// before), every LoRA shrink reads a bf16 x (tensor cores), the
	// expands and the backwards add into bf16 outputs: 76 launches (85
	// with f32 activations). Before the fused ops (commit c266c66): 166,
	// 65 of them LoRA sgemms (with the scalar attention kernels, one each
	// way).
	forward := map[string]int{"add_rmsnorm_wbf16_rbf16": 2, "attention_inputs_wbf16_kvbf16_qbf16": 1, "attention_inputs_backward_wbf16": 1,
		"attention_flash_tc_hd64": 1, "attention_flash_tc_dq_hd64": 1, "attention_flash_tc_dkdv_hd64_dkdv": 1,
		"lora_shrink_tc_xbf16": 4, "lora_expand_f32_ybf16": 4, "swiglu_rows_bf16": 1, "swiglu_rows_backward_f32_dbf16_dybf16_gubf16": 1,
		"rmsnorm_backward_wbf16_dybf16": 2, "lora_expand_backward_f32_ybf16": 4, "lora_shrink_backward_tc_dxbf16": 4}
	first, rest := map[string]int{}, map[string]int{}
	for k, v := range forward {
		first[k], rest[k] = v, v
	}
	// GEMMs (forward 4).
	first["gemm_bf16"], rest["gemm_bf16"] = 4+3, 4+4
	// Layer 0: its input norm adds nothing (the embedding) and has no
	// backward; its q/k/v group's shrink backward has no dx.
	first["add_rmsnorm_wbf16"], first["add_rmsnorm_wbf16_rbf16"] = 1, 1
	first["rmsnorm_backward_wbf16_dybf16"] = 1
	first["lora_shrink_backward_tc"], first["lora_shrink_backward_tc_dxbf16"] = 1, 3
	once := map[string]int{"gather_rows_bf16": 1, "add_rmsnorm_wbf16_rbf16": 1, "gemm_bf16": 2,
		"log_softmax_gather_f32": 1, "log_softmax_gather_backward_bf16": 1, "rmsnorm_backward_wbf16": 1, "fill_f32": 1}
	checkLaunches(t, d, m.Config.NumLayers, first, rest, once)
	if got := d.total(); got != 76 || m.Config.NumLayers != 2 {
		t.Errorf("%d launches over %d layers, want 76 over 2 (85 with f32 activations, 166 before the fused ops)", got, m.Config.NumLayers)
	}
}
