package bench

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestBenchMoEShapeSmoke runs grpo bench on the small Qwen3-MoE shape
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
			var out bytes.Buffer
			old := stdout
			stdout = &out
			err := runBench(benchOpts{shape: "qwen3-moe-9m", device: dev, dtype: "auto", prefill: 4, decode: 2, batch: 2,
				repeat: 1, prefillChunk: 64, trainSeqs: 1, trainLen: 6, loraRank: 4, json: true, noMatmul: true})
			stdout = old
			if err != nil {
				t.Fatal(err)
			}
			var res struct {
				Weights string
				Results []benchResult
			}
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Fatalf("%v in %s", err, out.String())
			}
			if len(res.Results) < 3 {
				t.Fatalf("results %+v: want prefill, decode and train", res.Results)
			}
			for _, r := range res.Results {
				if !(r.Value > 0) {
					t.Errorf("%s = %v", r.Name, r.Value)
				}
			}
			t.Logf("%s weights: %+v", res.Weights, res.Results)
		})
	}
}
