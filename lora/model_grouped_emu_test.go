package lora_test

import (
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// The model with an adapter attached, on the emulated device: these tests
// live here, not in model or kernels/emu, because tests follow the
// dependency arrows and only lora and what is above it may import lora.

// ungrouped hides lora.Adapter's GroupA, so the model runs one LoRA
// shrink and expand per projection over the same parameters.
type ungrouped struct{ model.Adapter }

// TestGroupedLoRAMatchesPerProjection: on the emulated device, the fused
// LoRA kernels over a whole group (one shrink over q/k/v's A matrices, one
// expand into the fused output, one backward pair) give the log-probs and
// every LoRA gradient of the per-projection path. The full-model suite
// (TestFullModel) checks the per-projection path against the CPU backend;
// this closes the loop for the grouped one. Each output element is the
// same f32 sums in the same order except dx's Σ over the group's ranks,
// which the per-projection path adds up per member; hence NMSE 1e-12. The
// model has f32 weights: with bf16 ones every GEMM rounds its input to
// bf16, which turns dx's last-bit differences into bf16-ulp ones
// downstream.
func TestGroupedLoRAMatchesPerProjection(t *testing.T) {
	be := emu.New()
	defer be.Close()
	m, err := model.Load("../testdata/models/qwen3-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	cfg := lora.DefaultConfig()
	cfg.Rank = 3
	ad, err := lora.New(m, cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer ad.Free()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range ad.Params() {
		v := make([]float32, p.Value.Len())
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 0.1)
		}
		be.Upload(p.Value, v)
	}
	grouped := trainOnce(t, m.WithAdapter(ad), ad)
	ad.ZeroGrad()
	per := trainOnce(t, m.WithAdapter(ungrouped{ad}), ad)
	tol := kerneltest.Tol{NMSE: 1e-12, MaxAbs: 1e-6}
	for i := range grouped {
		want := make([]float64, len(per[i]))
		for j, v := range per[i] {
			want[j] = float64(v)
		}
		if err := kerneltest.Compare("output", grouped[i], want, tol); err != nil {
			t.Errorf("output %d (0: log-probs, then each parameter's gradient): %v", i, err)
		}
	}
}

// trainOnce runs a training forward and backward of two sequences and
// returns the log-probs and every parameter's gradient.
func trainOnce(t *testing.T, m *model.Model, ad *lora.Adapter) [][]float32 {
	t.Helper()
	var b model.Batch
	b.Add(0, 0, 5, 6, 7, 8, 9, 10)
	b.Add(1, 0, 11, 12, 13, 14)
	targets := []int32{6, 7, 8, 9, 10, 3, 12, 13, 14, 4}
	tr, err := m.ForwardTrain(&b, nil, targets)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	be := m.Backend
	d := be.Alloc(kernels.F32, tr.Rows())
	defer be.Free(d)
	dv := make([]float32, tr.Rows())
	for i := range dv {
		dv[i] = float32(i%3) - 1
	}
	be.Upload(d, dv)
	if err := tr.Backward(d); err != nil {
		t.Fatal(err)
	}
	out := [][]float32{make([]float32, tr.Rows())}
	be.Download(out[0], tr.Logp)
	for _, p := range ad.Params() {
		g := make([]float32, p.Grad.Len())
		be.Download(g, p.Grad)
		out = append(out, g)
	}
	return out
}
