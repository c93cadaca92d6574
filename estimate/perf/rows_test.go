package perf

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/model"
)

// TestPerfModelQwen3At128: the real static decode step of Qwen3-0.6B at
// batch 128 and context 512, driven on the null device, is after warm-up
// one graph launch and nothing else but the two downloads of 8 bytes a
// sequence (and their two waits): no allocation, free, upload or kernel
// issued from the host. Its GEMMs read exactly the analytic bf16 weight
// bytes less what no GEMM reads — the norms' weights (read by the norm
// kernels) and the 128 gathered embedding rows — with no tolerance: both
// are sums of whole tensors. The step's bytes are checked against a hand
// computation (cmd/grpo's TestPerfTable prints them).
func TestPerfModelQwen3At128(t *testing.T) {
	if testing.Short() {
		t.Skip("draws Qwen3-0.6B's 596M random weights (a few seconds on 2 cores)")
	}
	rows, err := Rows([]string{"qwen3-0.6b"}, []int{128}, []int{512}, Sharing{Group: 1}, 1.5e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	r := rows[0]
	c := r.Counts
	want := cuda.Counts{GraphLaunches: 1, GraphKernels: c.GraphKernels, Syncs: 2, DtoH: 2, DtoHBytes: 8 * 128, WeightBytes: c.WeightBytes, FLOPs: c.FLOPs}
	if c != want || c.GraphKernels < 28*5 {
		t.Errorf("decode step after warm-up: %v\nwant 1 graph launch of at least 5 nodes a layer, 2 downloads of %d bytes and their waits, nothing else", c, 4*128)
	}
	cfg, _ := model.Shape("qwen3-0.6b")
	norms := float64(cfg.NumLayers*(2*cfg.HiddenSize+2*cfg.HeadDim) + cfg.HiddenSize)
	gathered := float64(128 * cfg.HiddenSize)
	if got, want := float64(c.WeightBytes), r.Bytes.Weights-2*(norms+gathered); got != want {
		t.Errorf("GEMMs read %.0f weight bytes a step, the model says %.0f (analytic %.0f less norms and gathered rows)", got, want, r.Bytes.Weights)
	}
	// By hand: 596,049,920 parameters (embedding 151936·1024 once, tied;
	// 28 layers of 15,730,944; final norm 1024) and 128 gathered rows of
	// 1024, bf16: 2·596,180,992 = 1,192,361,984 B. LoRA r16, f32: 28 ·
	// 16·((1024+2048) + 2·(1024+1024) + (2048+1024) + 2·(1024+3072) +
	// (3072+1024)) · 4 = 40,370,176 B. KV: 128 · 512 · 2 · 28 · 1024 · 2 =
	// 7,516,192,768 B. Logits written and read: 2 · 4 · 128 · 151936 =
	// 155,582,464 B. Total 8,904,507,392 B.
	b := r.Bytes
	if b.Weights != 1192361984 || b.LoRA != 40370176 || b.KV != 7516192768 || b.Logits != 155582464 || b.Total() != 8904507392 {
		t.Errorf("bytes %+v (total %.0f), want weights 1192361984, LoRA 40370176, KV 7516192768, logits 155582464, total 8904507392", b, b.Total())
	}
	// Memory-bound: the roofline is the bytes at 4.8 TB/s (1855.1 µs).
	if got, want := r.Sheet, 8904507392/4.8e12; got != want {
		t.Errorf("datasheet roofline %v s, want %v s", got, want)
	}
	if got, want := r.Predicted, 8904507392/4.3e12+float64(c.GraphKernels)*1.5e-6; got != want {
		t.Errorf("predicted %v s, want the measured roofline plus 1.5 µs for each of %d nodes: %v s", got, c.GraphKernels, want)
	}
	// The counters' FLOPs (every GEMM's 2·m·n·k, LoRA and attention as
	// their ops report them) equal the model's, at the counted step's
	// context: the fourth step after a prefill of ctx − 1 tokens attends
	// to ctx + 3 positions. Exact: both are sums of integers below 2⁵³.
	if got, want := float64(c.FLOPs), DecodeFLOPs(cfg, 128, 512+3, LoRARank); got != want {
		t.Errorf("the step's counted FLOPs %.0f, the model's at context 515 %.0f (at 512: %.0f)", got, want, r.FLOPs)
	}
}

// TestQwen3_4BShape: the qwen3-4b shape has Qwen/Qwen3-4B's 4,022,468,096
// parameters: embedding 151936·2560 (tied), 36 layers of q 2560·4096, k
// and v 2560·1024, o 4096·2560, MLP 3·2560·9728 and norms 2·2560 + 2·128,
// final norm 2560.
func TestQwen3_4BShape(t *testing.T) {
	c, ok := model.Shape("qwen3-4b")
	if !ok {
		t.Fatal("no qwen3-4b shape")
	}
	perLayer := int64(2560*4096 + 2*2560*1024 + 4096*2560 + 3*2560*9728 + 2*2560 + 2*128)
	if want := 151936*2560 + 36*perLayer + 2560; c.ParamCount() != want {
		t.Errorf("qwen3-4b has %d parameters, want %d", c.ParamCount(), want)
	}
}
