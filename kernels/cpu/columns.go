package cpu

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

func (be *Backend) CopyColumns(dst, src kernels.Buffer, rows, width, dstCols, dstOff, srcCols, srcOff int) {
	const op = "CopyColumns"
	positive(op, rows, width)
	if dstOff < 0 || srcOff < 0 || dstOff+width > dstCols || srcOff+width > srcCols {
		panic(fmt.Sprintf("cpu.%s: columns [%d, %d) of %d and [%d, %d) of %d", op, dstOff, dstOff+width, dstCols, srcOff, srcOff+width, srcCols))
	}
	ds, bf := floatsOut(op, "dst", dst, rows*dstCols)
	ss := floats(op, "src", src, rows*srcCols)
	be.parallel(rows, width, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			d := ds[r*dstCols+dstOff : r*dstCols+dstOff+width]
			copy(d, ss[r*srcCols+srcOff:r*srcCols+srcOff+width])
			if bf {
				castBF16(d, d)
			}
		}
	})
}
