package cpu

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

func (be *Backend) ScatterRows(out, src, idx kernels.Buffer, n, cols int) {
	const op = "ScatterRows"
	positive(op, n, cols)
	is := ints(op, "idx", idx, n)
	ss := floats(op, "src", src, n*cols)
	os := floats(op, "out", out, out.Len())
	if out.DType() != src.DType() {
		panic(fmt.Sprintf("cpu.%s: out is %v and src %v; the rows move as they are, so both are one dtype", op, out.DType(), src.DType()))
	}
	rows := len(os) / cols
	index(op, "idx", is, rows)
	// Repeated indices would make the result depend on write order (and on
	// the GPU, on scheduling), so the reference rejects them.
	seen := make(map[int32]int, n)
	for i, r := range is {
		if j, ok := seen[r]; ok {
			panic(fmt.Sprintf("cpu.%s: idx[%d] and idx[%d] are both %d; indices must be distinct", op, j, i, r))
		}
		seen[r] = i
	}
	be.parallel(n, cols, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			r := int(is[i])
			copy(os[r*cols:(r+1)*cols], ss[i*cols:(i+1)*cols])
		}
	})
}
