package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// copyColumnsCases cover a one-column block, the split of a fused q/k/v
// output into its middle part and a last part, and the join of a part back
// into a wide matrix; dst starts random, so a backend that writes outside
// the block is caught.
func copyColumnsCases() []Case {
	type shape struct{ rows, width, dstCols, dstOff, srcCols, srcOff int }
	shapes := []shape{
		{1, 1, 1, 0, 1, 0},
		{5, 1, 3, 2, 4, 1},
		{7, 16, 16, 0, 64, 32},     // split: k of q|k|v = 32|16|16
		{3, 300, 300, 0, 600, 300}, // split: up of gate|up
		{9, 33, 97, 64, 33, 0},     // join: a part into columns 64..97
	}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(3400+i)
		cs = append(cs, Case{Op: "CopyColumns", Name: fmt.Sprintf("rows=%d,width=%d,dst=%d@%d,src=%d@%d", s.rows, s.width, s.dstCols, s.dstOff, s.srcCols, s.srcOff),
			check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				src := e.in("src", e.uniform(s.rows*s.srcCols, 2))
				dst := e.out("dst", e.uniform(s.rows*s.dstCols, 1))
				want := RefCopyColumns(dst.values(), src.values(), s.rows, s.width, s.dstCols, s.dstOff, s.srcCols, s.srcOff)
				b.CopyColumns(dst.view, src.view, s.rows, s.width, s.dstCols, s.dstOff, s.srcCols, s.srcOff)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("dst", dst.result(b), want, tolExact)
			}})
	}
	return cs
}
