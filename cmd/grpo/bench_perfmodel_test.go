package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/estimate/perf"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// TestPerfTable: the table prints a row's bytes as perf's
// TestPerfModelQwen3At128 computes them by hand (Qwen3-0.6B at batch 128
// and context 512: weights 1,192,361,984 B, LoRA 40,370,176, KV
// 7,516,192,768, logits 155,582,464, total 8,904,507,392), and its KV
// header names the group the model assumed.
func TestPerfTable(t *testing.T) {
	cfg, _ := model.Shape("qwen3-0.6b")
	r := perf.Row{Shape: "qwen3-0.6b", Batch: 128, Ctx: 512,
		Bytes: perf.DecodeBytes(cfg, 128, 512, perf.LoRARank, kernels.BF16),
		FLOPs: perf.DecodeFLOPs(cfg, 128, 512, perf.LoRARank)}
	r.Sheet = perf.RooflineSeconds(r.Bytes.Total(), r.FLOPs, perf.H200HBMBytes, perf.H200BF16FLOPs)
	r.Measured = perf.RooflineSeconds(r.Bytes.Total(), r.FLOPs, perf.H200MeasuredHBMBytes, perf.H200MeasuredBF16FLOPs)
	r.Predicted = r.Measured
	var out bytes.Buffer
	writePerfTable(&out, []perf.Row{r}, perf.Sharing{Group: 1}, 1.5e-6)
	if !strings.Contains(out.String(), "| qwen3-0.6b | 128 | 512 | 1.192 | 40.4 | 7.516 | 155.6 | 8.905 |") {
		t.Errorf("table row not as computed:\n%s", out.String())
	}
	out.Reset()
	writePerfTable(&out, []perf.Row{r}, perf.Sharing{Group: 8, Prompt: 40}, 1.5e-6)
	if !strings.Contains(out.String(), "| KV GB (G=8, prompt 40) |") {
		t.Errorf("table header does not name the group:\n%s", out.String())
	}
}
