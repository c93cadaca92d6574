package model

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestGptOssLoRAGradientsMatchPyTorchEmu is TestGptOssLoRAGradientsMatchPyTorch
// on the CUDA kernels under emu, through clamped_swiglu_f32,
// grouped_add_bias_f32 and their backward. f32 experts (gpt_oss-tiny)
// take the f32 grouped GEMM and hold the CPU's bars, log-probs within
// 1e-4 (measured 9.5e-7) and gradient NMSE 1e-6 (2.9e-12). bf16 and MXFP4
// experts take the tensor-core grouped GEMM, which rounds its activations
// to bf16 as it stages them, as a bf16 PyTorch run does, so their bars
// are bf16's: log-probs within 3e-3 (measured 1.2e-3) and gradient NMSE
// within 1e-3 (1.6e-4), internal/modeltest's bf16 bounds.
func TestGptOssLoRAGradientsMatchPyTorchEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("trains under the emulator")
	}
	b := emu.New()
	defer b.Close()
	for _, c := range []struct {
		name            string
		maxLogp, maxErr float64
	}{{"gpt_oss-tiny", 1e-4, 1e-6}, {"gpt_oss-tiny-bf16", 3e-3, 1e-3}, {"gpt_oss-tiny-mxfp4", 3e-3, 1e-3}} {
		t.Run(c.name, func(t *testing.T) { checkGptOssLoRAGrad(t, b, c.name, c.maxLogp, c.maxErr) })
	}
}

// TestGptOssMXFP4KeptEmu: on emu (as on cuda) the MXFP4 checkpoint's
// experts stay MXFP4 on the device — the model's expert bytes are the
// blocks' and scales', 4.25 bits an element against the bf16 twin's 16 —
// and the grouped GEMM decodes them as it stages its tiles, so logits
// (with and without an adapter) and the PyTorch LoRA check's log-probs
// and gradients equal the bf16 twin's bit for bit.
func TestGptOssMXFP4KeptEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("trains under the emulator")
	}
	b := emu.New()
	defer b.Close()
	var ms [2]*Model
	for i, name := range []string{"gpt_oss-tiny-bf16", "gpt_oss-tiny-mxfp4"} {
		m, err := Load(filepath.Join("..", "testdata", "models", name), b)
		if err != nil {
			t.Fatal(err)
		}
		ms[i] = m
	}
	c := ms[0].Config
	gateUp, down := int64(c.NumExperts*2*c.MoEIntermediateSize*c.HiddenSize), int64(c.NumExperts*c.HiddenSize*c.MoEIntermediateSize)
	for l := range ms[0].W.Layers {
		bf, mx := ms[0].W.Layers[l].MoE, ms[1].W.Layers[l].MoE
		if mx.GateUp != nil || mx.Down != nil || mx.GateUpMX == nil || mx.DownMX == nil || mx.Experts[0].Gate != nil {
			t.Fatalf("layer %d: the MXFP4 experts were not kept MXFP4", l)
		}
		var bfBytes, mxBytes int64
		for _, x := range []kernels.Buffer{bf.GateUp, bf.Down} {
			bfBytes += int64(x.Len() * x.DType().Size())
		}
		for _, x := range mx.mxfp4Buffers() {
			mxBytes += int64(x.Len() * x.DType().Size())
		}
		if want := kernels.MXFP4Bytes(gateUp) + kernels.MXFP4Bytes(down); mxBytes != want || bfBytes != 2*(gateUp+down) {
			t.Fatalf("layer %d: expert bytes %d MXFP4 (want %d), %d bf16 (want %d)", l, mxBytes, want, bfBytes, 2*(gateUp+down))
		}
		if l == 0 {
			t.Logf("experts of a layer: %d bytes MXFP4, %d bf16 (%.3f)", mxBytes, bfBytes, float64(mxBytes)/float64(bfBytes))
		}
	}
	var batch Batch
	tokens := []int32{5, 17, 300, 2, 99, 411, 7, 8, 250, 33}
	batch.Add(0, 0, tokens...)
	for _, adapted := range []bool{false, true} {
		var out [2][]float32
		for i, m := range ms {
			if adapted {
				m = m.WithAdapter(newMoETestAdapter(m, 3, 11))
			}
			got, err := m.Logits(m.NewKVCache(1, len(tokens)), &batch, nil)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = got
		}
		if !bitsEqual(out[0], out[1]) {
			t.Errorf("adapter %v: logits differ by %g", adapted, maxAbsDiff(out[0], out[1]))
		}
	}
	lpBF, gBF := checkGptOssLoRAGrad(t, b, "gpt_oss-tiny-bf16", 3e-3, 1e-3)
	lpMX, gMX := checkGptOssLoRAGrad(t, b, "gpt_oss-tiny-mxfp4", 3e-3, 1e-3)
	if !bitsEqual(lpBF, lpMX) {
		t.Errorf("training log-probs differ by %g", maxAbsDiff(lpBF, lpMX))
	}
	for i := range gBF {
		if !bitsEqual(gBF[i], gMX[i]) {
			t.Errorf("gradient %d differs by %g", i, maxAbsDiff(gBF[i], gMX[i]))
		}
	}
	t.Logf("logits, training log-probs and %d gradients bit for bit", len(gBF))
}

func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
