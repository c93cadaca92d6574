package bench

import (
	"testing"

	_ "github.com/grpo-dev/grpo/kernels/emu" // registers the "emu" backend
	"github.com/grpo-dev/grpo/model"
)

// TestBenchMoEShapeSmoke runs the bench on the small Qwen3-MoE shape
// (random weights) on the CPU and, with bf16 weights, on the CUDA backend
// under emu: prefill, decode and a LoRA train step through the experts'
// grouped GEMMs all report a positive rate. The qwen3-30b-a3b shape is
// the same code at 61 GB of bf16 weights: its figures need a GPU.
func TestBenchMoEShapeSmoke(t *testing.T) {
	for _, dev := range []string{"cpu", "emu"} {
		t.Run(dev, func(t *testing.T) {
			if dev == "emu" && testing.Short() {
				t.Skip("the emulator takes ~8 s for a 9M-parameter model")
			}
			cfg, ok := model.Shape("qwen3-moe-9m")
			if !ok {
				t.Fatal("no qwen3-moe-9m shape")
			}
			m := randomModel(t, *cfg, dev)
			res, err := Run(m, Options{Prefill: 4, Decode: 2, Batch: 2,
				Repeat: 1, PrefillChunk: 64, TrainSeqs: 1, TrainLen: 6, LoRARank: 4, NoMatmul: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Figures) < 3 {
				t.Fatalf("results %+v: want prefill, decode and train", res.Figures)
			}
			for _, r := range res.Figures {
				if !(r.Value > 0) {
					t.Errorf("%s = %v", r.Name, r.Value)
				}
			}
			t.Logf("%s weights: %+v", WeightDType(m), res.Figures)
		})
	}
}
