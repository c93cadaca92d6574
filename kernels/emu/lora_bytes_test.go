package emu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// loraGroupStep runs a q/k/v group's LoRA work of one training
// micro-batch — LoRAShrink, LoRAExpand, LoRAExpandBackward (every dB),
// LoRAShrinkBackward (dx and dA) — over rows tokens of width in, ranks r
// per part, outputs in, in/4, in/4 into one fused output, with x and xa
// in act (F32: lora.cu's kernels; BF16: lora_tc.cu's), on a fresh
// emulated device. It returns the bytes the LoRA kernels counted as read
// (their operand loads, GRPO_COUNT_READ) and the launches.
func loraGroupStep(t *testing.T, act kernels.DType, rows, in, r int) (reads uint64, launches int64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	d := NewDevice()
	b := newBackend(d)
	defer b.Close()
	alloc := func(dt kernels.DType, n int) kernels.Buffer {
		buf := b.Alloc(dt, n)
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.Float64() - 0.5)
		}
		b.Upload(buf, v)
		return buf
	}
	outs := []int{in, in / 4, in / 4}
	width, ranks := in+in/2, 3*r
	x, a := alloc(act, rows*in), alloc(kernels.F32, ranks*in)
	xa, dxa := alloc(act, rows*ranks), alloc(kernels.F32, rows*ranks)
	y, dy, dx, da := alloc(kernels.F32, rows*width), alloc(kernels.F32, rows*width), alloc(kernels.F32, rows*in), alloc(kernels.F32, ranks*in)
	var fwd, bwd []kernels.LoRAPart
	off := 0
	for _, o := range outs {
		bm, db := alloc(kernels.F32, o*r), alloc(kernels.F32, o*r)
		fwd = append(fwd, kernels.LoRAPart{B: bm, Rank: r, Out: o, Scale: 2, Y: y, YCols: width, YOff: off})
		bwd = append(bwd, kernels.LoRAPart{B: bm, DB: db, Rank: r, Out: o, Scale: 2, Y: dy, YCols: width, YOff: off})
		off += o
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	before := b.Counts()
	b.LoRAShrink(xa, x, a, rows, in, ranks)
	b.LoRAExpand(xa, fwd, rows)
	b.LoRAExpandBackward(dxa, xa, bwd, rows)
	b.LoRAShrinkBackward(dx, da, dxa, x, a, rows, in, ranks)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	launches = b.Counts().Sub(before).Launches
	d.mu.Lock()
	var each []string
	for name, n := range d.reads {
		if strings.HasPrefix(name, "lora_") {
			reads += n
			each = append(each, fmt.Sprintf("%s %d", name, n))
		}
	}
	d.mu.Unlock()
	slices.Sort(each)
	t.Logf("%v activations, rows %d, in %d: %s", act, rows, in, strings.Join(each, ", "))
	return reads, launches
}

// TestLoRATensorCoresReadLess counts what a q/k/v group's LoRA forward and
// backward read with f32 activations (lora.cu: a warp per output element,
// which rereads x for every rank and xa for every output column) and with
// bf16 ones (lora_tc.cu: 64 × 64 tiles, each operand element staged once
// per tile), at two micro-batch shapes: the tensor-core kernels must read
// at most a tenth as much, in the same number of launches (four per group,
// one per op). Writes are the same in both (every output element once).
// The counts are bytes requested by thread loads: where the lanes of a
// warp read one address (the f32 expand's xa row, the dB and dx sums'
// broadcast operand) a GPU serves them in one transaction, so the f32
// figures overstate those kernels' traffic; the shrinks, which reread x
// per rank with no broadcast, carry most of the difference.
func TestLoRATensorCoresReadLess(t *testing.T) {
	for _, s := range []struct{ rows, in, r int }{{128, 256, 16}, {256, 512, 16}} {
		f32Reads, f32Launches := loraGroupStep(t, kernels.F32, s.rows, s.in, s.r)
		tcReads, tcLaunches := loraGroupStep(t, kernels.BF16, s.rows, s.in, s.r)
		t.Logf("rows %d, in %d, rank %d ×3: f32 kernels read %d B in %d launches, tensor-core kernels %d B in %d (%.1f×)",
			s.rows, s.in, s.r, f32Reads, f32Launches, tcReads, tcLaunches, float64(f32Reads)/float64(tcReads))
		if tcLaunches != f32Launches || tcLaunches != 4 {
			t.Errorf("launches: f32 %d, tensor cores %d; want 4 each", f32Launches, tcLaunches)
		}
		if tcReads*10 > f32Reads {
			t.Errorf("tensor-core kernels read %d B, f32 kernels %d B: want at most a tenth", tcReads, f32Reads)
		}
	}
}
