package model

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// gptOssModels are the tiny gpt-oss checkpoints: f32 experts, the same
// experts bf16, and as MXFP4 blocks and scales.
var gptOssModels = []string{"gpt_oss-tiny", "gpt_oss-tiny-bf16", "gpt_oss-tiny-mxfp4"}

// TestGptOssLogitsMatchPyTorch compares the forward pass of the tiny
// gpt-oss models (attention sinks, sliding windows of 4 keys in layer 0,
// YaRN, biased clamped-SwiGLU experts) with the float64 PyTorch reference
// testdata/reference/gpt_oss_reference.py, prefill (1 to 256 tokens) and
// token by token through the KV cache, within 5e-5 as the other families.
func TestGptOssLogitsMatchPyTorch(t *testing.T) {
	const tol = 5e-5
	for _, name := range gptOssModels {
		t.Run(name, func(t *testing.T) { checkLogitsGolden(t, name, tol) })
	}
}

// TestGptOssMXFP4EqualsBF16 loads the MXFP4 checkpoint and its bf16 twin
// (the dequantized values, as testdata/gen writes them): every expert
// weight equal bit for bit, and so the logits, without an adapter and with
// the same adapter on attention, experts and routers. The f32 checkpoint
// of the same values loads its experts f32, equal in value.
func TestGptOssMXFP4EqualsBF16(t *testing.T) {
	be := cpu.New()
	var ms [3]*Model
	for i, name := range gptOssModels {
		m, err := Load(filepath.Join("..", "testdata", "models", name), be)
		if err != nil {
			t.Fatal(err)
		}
		ms[i] = m
	}
	bits := func(b kernels.Buffer) []float32 {
		v := make([]float32, b.Len())
		be.Download(v, b)
		return v
	}
	for l := range ms[0].W.Layers {
		f, a, b := ms[0].W.Layers[l].MoE, ms[1].W.Layers[l].MoE, ms[2].W.Layers[l].MoE
		if f.GateUp.DType() != kernels.F32 || f.Down.DType() != kernels.F32 || a.GateUp.DType() != kernels.BF16 {
			t.Fatalf("layer %d: f32 checkpoint's experts %v and %v, bf16's %v", l, f.GateUp.DType(), f.Down.DType(), a.GateUp.DType())
		}
		for _, p := range [][3]kernels.Buffer{{f.GateUp, a.GateUp, b.GateUp}, {f.Down, a.Down, b.Down}, {f.GateUpBias, a.GateUpBias, b.GateUpBias}, {f.DownBias, a.DownBias, b.DownBias}} {
			if p[1].DType() != p[2].DType() {
				t.Fatalf("layer %d: dtypes %v and %v", l, p[1].DType(), p[2].DType())
			}
			w, x, y := bits(p[0]), bits(p[1]), bits(p[2])
			for i := range x {
				if math.Float32bits(x[i]) != math.Float32bits(y[i]) || math.Float32bits(w[i]) != math.Float32bits(x[i]) {
					t.Fatalf("layer %d: element %d: f32 %g, bf16 %g, MXFP4 %g", l, i, w[i], x[i], y[i])
				}
			}
		}
	}
	var b Batch
	tokens := []int32{5, 17, 300, 2, 99, 411, 7, 8, 250, 33}
	b.Add(0, 0, tokens...)
	for _, adapted := range []bool{false, true} {
		var out [2][]float32
		for i, m := range ms[1:] {
			if adapted {
				m = m.WithAdapter(newMoETestAdapter(m, 3, 11))
			}
			got, err := m.Logits(m.NewKVCache(1, len(tokens)), &b, nil)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = got
		}
		if d := maxAbsDiff(out[0], out[1]); d != 0 {
			t.Errorf("adapter %v: logits differ by %g", adapted, d)
		}
	}
}

// TestMXFP4Planted decodes planted blocks: the low nibble is the even
// element, code 8 is −0, the scale byte s multiplies by 2^(s−127), and
// gate_up_proj's interleaved rows come out gate rows first.
func TestMXFP4Planted(t *testing.T) {
	p := &packedExperts{name: "x", experts: 1, held: 1, in: 32, out: 2, interleaved: true}
	blocks := make([]byte, 2*16)
	blocks[0] = 0x21           // row 0 (gate 0): elements 0, 1 = 0.5, 1
	blocks[1] = 0xf8           // elements 2, 3 = −0, −6
	blocks[16] = 0x7c          // row 1 (up 0): elements 0, 1 = −2, 6
	scales := []byte{130, 126} // ×8 and ×0.5
	bt, _ := safetensors.NewTensor("x_blocks", safetensors.U8, []int{1, 2, 1, 16}, blocks)
	st, _ := safetensors.NewTensor("x_scales", safetensors.U8, []int{1, 2, 1}, scales)
	got, err := p.fromMXFP4(bt, st)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int]float32{0: 4, 1: 8, 2: float32(math.Copysign(0, -1)), 3: -48, 4: 0, 32: -1, 33: 3, 34: 0} {
		if g := safetensors.BF16ToF32(got[i]); math.Float32bits(g) != math.Float32bits(want) {
			t.Errorf("element %d: %g, want %g", i, g, want)
		}
	}
	if _, err := p.fromMXFP4(st, st); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("scales as blocks: %v", err)
	}
}
