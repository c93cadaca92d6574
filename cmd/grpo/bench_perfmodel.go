package main

import (
	"fmt"
	"io"
	"os"

	"github.com/grpo-dev/grpo/estimate/perf"
)

// runPerfModel is grpo bench --perf-model: estimate/perf's decode
// performance model as a Markdown table (BENCHMARKS.md "Decode
// performance model").
func runPerfModel(o benchOpts) error {
	if !(o.nodeMicros >= 0) {
		return usagef("--node-us %v: want a cost per graph node of 0 µs or more", o.nodeMicros)
	}
	if o.Group < 0 {
		return usagef("--perf-model --group %d: want 1 or more rollouts per prompt", o.Group)
	}
	sh := perf.Sharing{Group: max(o.Group, 1), Prompt: o.Prefill}
	if sh.Group > 1 && sh.Prompt < 1 {
		return usagef("--perf-model --group %d --prefill %d: want a prompt of at least 1 token to share", sh.Group, sh.Prompt)
	}
	rows, err := perf.Rows(perf.Shapes, perf.Batches, perf.Contexts, sh, o.nodeMicros*1e-6, os.Stderr)
	if err != nil {
		return err
	}
	writePerfTable(stdout, rows, sh, o.nodeMicros*1e-6)
	return nil
}

// kvHeader names the KV column.
func kvHeader(sh perf.Sharing) string {
	if sh.Group < 2 {
		return "KV GB"
	}
	return fmt.Sprintf("KV GB (G=%d, prompt %d)", sh.Group, sh.Prompt)
}

// writePerfTable prints the rows as a Markdown table.
func writePerfTable(w io.Writer, rows []perf.Row, sh perf.Sharing, nodeCost float64) {
	fmt.Fprintf(w, "| model | batch | ctx | weights GB | LoRA MB | %s | logits MB | bytes/step GB | GFLOP/step | roofline µs (datasheet) | tok/s (datasheet) | roofline µs (measured) | tok/s (measured) | graph nodes | graph launches | GEMM weight GB (counted) | DtoH B | allocs/frees/syncs | predicted µs (+%.1f µs/node) | predicted tok/s |\n", kvHeader(sh), nodeCost*1e6)
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		c := r.Counts
		fmt.Fprintf(w, "| %s | %d | %d | %.3f | %.1f | %.3f | %.1f | %.3f | %.1f | %.0f | %.0f | %.0f | %.0f | %d | %d | %.3f | %d | %d/%d/%d | %.0f | %.0f |\n",
			r.Shape, r.Batch, r.Ctx, r.Bytes.Weights/1e9, r.Bytes.LoRA/1e6, r.Bytes.KV/1e9, r.Bytes.Logits/1e6, r.Bytes.Total()/1e9,
			r.FLOPs/1e9, r.Sheet*1e6, float64(r.Batch)/r.Sheet, r.Measured*1e6, float64(r.Batch)/r.Measured,
			c.GraphKernels, c.GraphLaunches, float64(c.WeightBytes)/1e9, c.DtoHBytes, c.Allocs, c.Frees, c.Syncs,
			r.Predicted*1e6, float64(r.Batch)/r.Predicted)
	}
}
