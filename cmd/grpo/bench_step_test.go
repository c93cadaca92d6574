package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/grpo-dev/grpo/bench"
	"github.com/grpo-dev/grpo/model"
)

// tinyStepShape is a Qwen3 shape small enough for a test to take whole
// GRPO steps on the CPU in milliseconds.
var tinyStepShape = model.Config{ModelType: "qwen3", HiddenSize: 16, IntermediateSize: 32, NumLayers: 2,
	NumHeads: 2, NumKVHeads: 1, HeadDim: 8, VocabSize: 64, RMSNormEps: 1e-6, RopeTheta: 1e6,
	MaxPositions: 128, TieWordEmbeddings: true, HiddenAct: "silu"}

// TestStepBenchJSON runs `grpo bench --grpo-step --json` end to end on a
// tiny shape and checks the figures scripts/bench.sh reads.
func TestStepBenchJSON(t *testing.T) {
	const shape = "test-step-tiny"
	model.Shapes[shape] = tinyStepShape
	defer delete(model.Shapes, shape)
	var out bytes.Buffer
	old := stdout
	stdout = &out
	defer func() { stdout = old }()
	err := runBench(benchOpts{shape: shape, device: "cpu", dtype: "auto", json: true, Options: bench.Options{Prefill: 1, Batch: 1, Repeat: 2, PrefillChunk: 1,
		LoRARank: 4, Step: bench.StepOptions{Enabled: true, Prompts: 2, Rollouts: 2, PromptLen: 3, NewTokens: 4, MicroBatch: 8192}}})
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	for _, k := range []string{"generate_s", "train_s", "step_s"} {
		if v, ok := res[k].(float64); !ok || !(v > 0) {
			t.Errorf("%s = %v, want a positive number of seconds", k, res[k])
		}
	}
	if res["gen_tokens"] != float64(16) || res["train_tokens"] != float64(16) {
		t.Errorf("gen_tokens %v, train_tokens %v: want 16 each", res["gen_tokens"], res["train_tokens"])
	}
	if _, ok := res["blas"].(string); !ok {
		t.Errorf("no blas line in %v", res)
	}
}
