package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// scatterRowsCases cover n = 1, a one-column matrix, indices out of order
// with the first and last rows among them, and wide rows with most rows
// left untouched (the training head's case: a few scored rows of a long
// batch); out starts random, so a backend that clears or writes rows no
// index names is caught. Each over F32 rows and over BF16 ones (a bf16
// layer's expert rows under expert parallelism), copied exactly.
func scatterRowsCases() []Case {
	type shape struct {
		rows, cols int
		idx        []int32
	}
	shapes := []shape{
		{1, 1, []int32{0}},
		{11, 7, []int32{10, 0, 3, 9, 5}},
		{5, 1, []int32{4, 0}},
		{1000, 64, []int32{999, 0, 512, 17, 3, 998, 1, 500, 250, 125, 62, 31, 15, 7}},
	}
	var cs []Case
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		for i, s := range shapes {
			s, seed, name := s, uint64(3300+i), fmt.Sprintf("rows=%d,cols=%d,n=%d", s.rows, s.cols, len(s.idx))
			if dt == kernels.BF16 {
				seed, name = seed+50, name+",bf16"
			}
			cs = append(cs, Case{Op: "ScatterRows", Name: name,
				check: func(b kernels.Backend) error {
					e := newEnv(b, seed)
					defer e.free()
					n := len(s.idx)
					src := e.floats("src", dt, e.uniform(n*s.cols, 2), true)
					idx := e.ints("idx", s.idx)
					out := e.floats("out", dt, e.uniform(s.rows*s.cols, 1), false)
					want := RefScatterRows(out.values(), src.values(), s.idx, n, s.cols)
					b.ScatterRows(out.view, src.view, idx.view, n, s.cols)
					if err := e.checkAll(); err != nil {
						return err
					}
					return Compare("out", out.result(b), want, tolExact)
				}})
		}
	}
	return cs
}
