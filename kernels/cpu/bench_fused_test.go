package cpu_test

import (
	"fmt"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// BenchmarkFused runs each fused op beside the unfused ops it replaced in
// model/layer.go, on Qwen3-0.6B's shapes (hidden 1024, intermediate 3072,
// q/k/v 2048 + 2·1024, LoRA rank 16 on q/k/v) at a decode batch (128
// rows) and a prefill chunk (512 rows), so the two figures of each pair
// come from the same run:
//
//	go test ./kernels/cpu/ -run '^$' -bench BenchmarkFused -benchtime 200x
func BenchmarkFused(b *testing.B) {
	const h, inter, q, kv, rank = 1024, 3072, 2048, 1024, 16
	be := cpu.New()
	for _, n := range []int{128, 512} {
		x, r, w, out, sum, rstd := filled(be, n*h), filled(be, n*h), filled(be, h), filled(be, n*h), filled(be, n*h), filled(be, n)
		b.Run(fmt.Sprintf("AddRMSNorm/n=%d/fused", n), func(b *testing.B) {
			for b.Loop() {
				be.AddRMSNorm(sum, out, nil, rstd, x, r, w, n, h, 1e-6)
			}
		})
		b.Run(fmt.Sprintf("AddRMSNorm/n=%d/unfused", n), func(b *testing.B) {
			for b.Loop() {
				be.Add(sum, x, r, n*h)
				be.RMSNorm(out, rstd, sum, w, n, h, 1e-6)
			}
		})
		gateUp, gate, up, act := filled(be, n*2*inter), filled(be, n*inter), filled(be, n*inter), filled(be, n*inter)
		b.Run(fmt.Sprintf("SwiGLURows/n=%d/fused", n), func(b *testing.B) {
			for b.Loop() {
				be.SwiGLURows(act, nil, gateUp, n, inter)
			}
		})
		b.Run(fmt.Sprintf("SwiGLURows/n=%d/unfused", n), func(b *testing.B) {
			for b.Loop() {
				be.CopyColumns(gate, gateUp, n, inter, inter, 0, 2*inter, 0)
				be.CopyColumns(up, gateUp, n, inter, inter, 0, 2*inter, inter)
				be.SwiGLU(act, gate, up, n*inter)
			}
		})
		width := q + 2*kv
		fused, a, xa := filled(be, n*width), filled(be, 3*rank*h), filled(be, n*3*rank)
		outs := []int{q, kv, kv}
		var bs []kernels.Buffer
		var parts []kernels.LoRAPart
		off := 0
		for _, o := range outs {
			bb := filled(be, o*rank)
			bs = append(bs, bb)
			parts = append(parts, kernels.LoRAPart{B: bb, Rank: rank, Out: o, Scale: 2, Y: fused, YCols: width, YOff: off})
			off += o
		}
		b.Run(fmt.Sprintf("LoRAQKV/n=%d/fused", n), func(b *testing.B) {
			for b.Loop() {
				be.LoRAShrink(xa, x, a, n, h, 3*rank)
				be.LoRAExpand(xa, parts, n)
			}
		})
		// The former path: one shrink GEMM into xaᵀ, then an expand GEMM
		// per projection into its split output.
		split := []kernels.Buffer{filled(be, n*q), filled(be, n*kv), filled(be, n*kv)}
		b.Run(fmt.Sprintf("LoRAQKV/n=%d/unfused", n), func(b *testing.B) {
			for b.Loop() {
				be.MatMul(xa, a, x, 3*rank, n, h, false, true, 1, 0)
				for i, o := range outs {
					be.MatMul(split[i], xa.Slice(i*rank*n, rank*n), bs[i], n, o, rank, true, true, 2, 1)
				}
			}
		})
	}
}
