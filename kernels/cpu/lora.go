package cpu

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The LoRA ops (kernels.LoRAOps, kernels.LoRATrainOps) are strided sgemms
// over the parts' columns: the BLAS reads each part's slice of xa and of
// its output in place, so nothing is copied or split. A BF16 output (the
// parts' Y of the expand, dx of the shrink's backward) is summed into its
// f32 storage and rounded to bf16 afterwards, once per element, as the
// kernels round at their store.

// loraPart is a checked kernels.LoRAPart: its slices and first xa column.
type loraPart struct {
	kernels.LoRAPart
	b, db, y []float32
	o        int
}

// loraParts checks parts against rows and returns them with the total
// rank; their Ys must share one dtype, F32 or BF16.
func loraParts(op string, parts []kernels.LoRAPart, rows int) ([]loraPart, int) {
	if len(parts) == 0 {
		panic(fmt.Sprintf("cpu.%s: no parts", op))
	}
	ps := make([]loraPart, len(parts))
	o := 0
	for i, p := range parts {
		positive(op, p.Rank, p.Out, p.YCols)
		if p.YOff < 0 || p.YOff+p.Out > p.YCols {
			panic(fmt.Sprintf("cpu.%s: part %d's columns [%d, %d) outside its Y's %d", op, i, p.YOff, p.YOff+p.Out, p.YCols))
		}
		ps[i] = loraPart{LoRAPart: p, o: o,
			b: floats(op, fmt.Sprintf("part %d B", i), p.B, p.Out*p.Rank),
			y: floats(op, fmt.Sprintf("part %d Y", i), p.Y, rows*p.YCols)}
		if p.Y.DType() != parts[0].Y.DType() {
			panic(fmt.Sprintf("cpu.%s: part %d's Y is %v, part 0's %v: the parts of one call share one Y dtype", op, i, p.Y.DType(), parts[0].Y.DType()))
		}
		if p.DB != nil {
			ps[i].db = f32(op, fmt.Sprintf("part %d DB", i), p.DB, p.Out*p.Rank)
		}
		o += p.Rank
	}
	return ps, o
}

// LoRAShrink writes an F32 xa, or a BF16 one rounded from the f32 sums
// (the operand a tensor-core expand reads: kernels.LoRAOps).
func (be *Backend) LoRAShrink(xa, x, a kernels.Buffer, rows, in, ranks int) {
	const op = "LoRAShrink"
	positive(op, rows, in, ranks)
	xs := floats(op, "xa", xa, rows*ranks)
	be.gemm2D(false, true, rows, ranks, in, 1, floats(op, "x", x, rows*in), in, f32(op, "a", a, ranks*in), in, 0, xs, ranks)
	if xa.DType() == kernels.BF16 {
		castBF16(xs, xs)
	}
}

func (be *Backend) LoRAExpand(xa kernels.Buffer, parts []kernels.LoRAPart, rows int) {
	const op = "LoRAExpand"
	positive(op, rows)
	ps, ranks := loraParts(op, parts, rows)
	xs := floats(op, "xa", xa, rows*ranks)
	for _, p := range ps {
		be.gemm2D(false, true, rows, p.Out, p.Rank, p.Scale, xs[p.o:], ranks, p.b, p.Rank, 1, p.y[p.YOff:], p.YCols)
		if p.Y.DType() == kernels.BF16 {
			for r := range rows {
				y := p.y[r*p.YCols+p.YOff : r*p.YCols+p.YOff+p.Out]
				castBF16(y, y)
			}
		}
	}
}

func (be *Backend) LoRAExpandBackward(dxa, xa kernels.Buffer, parts []kernels.LoRAPart, rows int) {
	const op = "LoRAExpandBackward"
	positive(op, rows)
	ps, ranks := loraParts(op, parts, rows)
	ds, xs := f32(op, "dxa", dxa, rows*ranks), floats(op, "xa", xa, rows*ranks)
	for _, p := range ps {
		dy := p.y[p.YOff:]
		be.gemm2D(false, false, rows, p.Rank, p.Out, p.Scale, dy, p.YCols, p.b, p.Rank, 0, ds[p.o:], ranks)
		if p.db != nil {
			be.gemm2D(true, false, p.Out, p.Rank, rows, p.Scale, dy, p.YCols, xs[p.o:], ranks, 1, p.db, p.Rank)
		}
	}
}

func (be *Backend) LoRAShrinkBackward(dx, da, dxa, x, a kernels.Buffer, rows, in, ranks int) {
	const op = "LoRAShrinkBackward"
	positive(op, rows, in, ranks)
	ds := f32(op, "dxa", dxa, rows*ranks)
	if dx != nil {
		d := floats(op, "dx", dx, rows*in)
		be.gemm2D(false, false, rows, in, ranks, 1, ds, ranks, f32(op, "a", a, ranks*in), in, 1, d, in)
		if dx.DType() == kernels.BF16 {
			castBF16(d, d)
		}
	}
	if da != nil {
		be.gemm2D(true, false, ranks, in, rows, 1, ds, ranks, floats(op, "x", x, rows*in), in, 1, f32(op, "da", da, ranks*in), in)
	}
}
