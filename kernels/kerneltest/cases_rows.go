package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// gatherRowsCases cover n = 1, repeated and boundary indices, one-column
// tables and wide rows, with F32 and BF16 tables (model weights, the
// embedding included, are loaded as BF16).
func gatherRowsCases() []Case {
	type shape struct {
		rows, cols int
		idx        []int32
	}
	shapes := []shape{
		{1, 1, []int32{0}},
		{11, 7, []int32{0, 10, 3, 3, 9}},
		{5, 1, []int32{4, 0}},
		{1000, 64, []int32{999, 0, 512, 17, 17, 3, 998, 1, 500, 250, 125, 62, 31, 15, 7, 3, 1}},
	}
	var cs []Case
	for i, s := range shapes {
		for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
			s, dt, seed := s, dt, uint64(300+i)
			cs = append(cs, Case{Op: "GatherRows", Name: fmt.Sprintf("rows=%d,cols=%d,n=%d,table=%v", s.rows, s.cols, len(s.idx), dt),
				check: func(b kernels.Backend) error { return checkGatherRows(b, seed, s.rows, s.cols, s.idx, dt, kernels.F32) }})
		}
	}
	return cs
}

// checkGatherRows gathers rows idx of a random rows × cols table in
// tableDT into an out in outDT that starts NaN, exactly: a BF16 out holds
// the rounding of its rows (CompareStored at tolExact).
func checkGatherRows(b kernels.Backend, seed uint64, rows, cols int, idx []int32, tableDT, outDT kernels.DType) error {
	e := newEnv(b, seed)
	defer e.free()
	n := len(idx)
	table := e.floats("table", tableDT, e.uniform(rows*cols, 2), true)
	ix := e.ints("idx", idx)
	out := e.floats("out", outDT, nans(n*cols), false)
	want := RefGatherRows(table.values(), idx, n, cols)
	b.GatherRows(out.view, table.view, ix.view, n, cols)
	if err := e.checkAll(); err != nil {
		return err
	}
	return CompareStored("out", outDT, out.result(b), want, tolExact)
}

// rmsNormCases cover dim = 1, odd and model-sized widths, the optional rstd
// output, and rows whose mean square is at or below eps (an all-zero row and
// a row of magnitude 1e-3), where dropping eps changes the result, BF16
// weights, and out aliasing x (the model normalises selected rows in
// place).
func rmsNormCases() []Case {
	type shape struct {
		rows, dim int
		eps       float32
		rstd      bool
		w         kernels.DType
		inPlace   bool
	}
	shapes := []shape{
		{1, 1, 1e-6, true, kernels.F32, false},
		{3, 7, 1e-5, false, kernels.F32, false},
		{5, 64, 1e-6, true, kernels.BF16, false},
		{4, 1000, 1e-6, true, kernels.F32, true},
		{2, 1024, 1e-5, false, kernels.BF16, true},
	}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(400+i)
		cs = append(cs, Case{Op: "RMSNorm", Name: fmt.Sprintf("rows=%d,dim=%d,eps=%g,rstd=%v,w=%v,inPlace=%v", s.rows, s.dim, s.eps, s.rstd, s.w, s.inPlace),
			check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				xv := normEdgeRows(e.uniform(s.rows*s.dim, 1), s.rows, s.dim)
				w := e.floats("w", s.w, e.uniform(s.dim, 1.5), true)
				var x, out *operand
				if s.inPlace {
					x = e.out("x", xv)
					out = x
				} else {
					x = e.in("x", xv)
					out = e.out("out", nans(s.rows*s.dim))
				}
				var rstd *operand
				var rstdBuf kernels.Buffer
				if s.rstd {
					rstd = e.out("rstd", nans(s.rows))
					rstdBuf = rstd.view
				}
				wantOut, wantRstd := RefRMSNorm(x.values(), w.values(), s.rows, s.dim, float64(s.eps))
				b.RMSNorm(out.view, rstdBuf, x.view, w.view, s.rows, s.dim, s.eps)
				if err := e.checkAll(); err != nil {
					return err
				}
				if err := Compare("out", out.result(b), wantOut, tolReduction); err != nil {
					return err
				}
				if s.rstd {
					return Compare("rstd", rstd.result(b), wantRstd, tolReduction)
				}
				return nil
			}})
	}
	return cs
}

// ropeCases cover headDim 2, 16, 64 and 128, the two common bases, positions
// from 0 to 32767, the inverse flag, and a forward-then-inverse round trip.
func ropeCases() []Case {
	type shape struct {
		nTok, nHead, headDim int
		base                 float64
	}
	shapes := []shape{{1, 1, 2, 10000}, {5, 3, 16, 10000}, {7, 2, 64, 1e6}, {3, 4, 128, 500000}}
	var cs []Case
	for i, s := range shapes {
		for _, inverse := range []bool{false, true} {
			s, inverse, seed := s, inverse, uint64(500+2*i)
			if inverse {
				seed++
			}
			cs = append(cs, Case{Op: "RoPE", Name: fmt.Sprintf("nTok=%d,nHead=%d,headDim=%d,base=%g,inverse=%v", s.nTok, s.nHead, s.headDim, s.base, inverse),
				check: func(b kernels.Backend) error {
					return checkRoPE(b, seed, s.nTok, s.nHead, s.headDim, s.base, inverse)
				}})
		}
		s, seed := s, uint64(550+i)
		cs = append(cs, Case{Op: "RoPE", Name: fmt.Sprintf("nTok=%d,nHead=%d,headDim=%d,base=%g,roundtrip", s.nTok, s.nHead, s.headDim, s.base),
			check: func(b kernels.Backend) error {
				return checkRoPERoundTrip(b, seed, s.nTok, s.nHead, s.headDim, s.base)
			}})
	}
	return cs
}

func ropeInputs(e *env, nTok, headDim int, base float64) (pos []int32, invFreq []float32) {
	pos = make([]int32, nTok)
	for t := range pos {
		pos[t] = int32(e.rng.IntN(32768))
	}
	pos[0] = 0
	if nTok > 1 {
		pos[nTok-1] = 32767
	}
	invFreq = make([]float32, headDim/2)
	for i := range invFreq {
		invFreq[i] = float32(1 / math.Pow(base, float64(2*i)/float64(headDim)))
	}
	return pos, invFreq
}

func checkRoPE(b kernels.Backend, seed uint64, nTok, nHead, headDim int, base float64, inverse bool) error {
	e := newEnv(b, seed)
	defer e.free()
	posv, fv := ropeInputs(e, nTok, headDim, base)
	x := e.out("x", e.uniform(nTok*nHead*headDim, 2))
	pos := e.ints("pos", posv)
	inv := e.in("invFreq", fv)
	want := RefRoPE(x.values(), posv, fv, nTok, nHead, headDim, inverse)
	b.RoPE(x.view, pos.view, inv.view, nTok, nHead, headDim, inverse)
	if err := e.checkAll(); err != nil {
		return err
	}
	return Compare("x", x.result(b), want, tolElementwise)
}

func checkRoPERoundTrip(b kernels.Backend, seed uint64, nTok, nHead, headDim int, base float64) error {
	e := newEnv(b, seed)
	defer e.free()
	posv, fv := ropeInputs(e, nTok, headDim, base)
	x := e.out("x", e.uniform(nTok*nHead*headDim, 2))
	pos := e.ints("pos", posv)
	inv := e.in("invFreq", fv)
	b.RoPE(x.view, pos.view, inv.view, nTok, nHead, headDim, false)
	b.RoPE(x.view, pos.view, inv.view, nTok, nHead, headDim, true)
	if err := e.checkAll(); err != nil {
		return err
	}
	return Compare("inverse(forward(x))", x.result(b), x.values(), tolElementwise)
}

// normEdgeRows makes the first rows of x (rows × dim, when there are 3
// or more) a norm's edge cases: row 0 all zeros (mean square 0 < eps),
// row 1 scaled by 1e-3 (mean square ≈ eps), row 2 by 1e4 (large values).
func normEdgeRows(x []float32, rows, dim int) []float32 {
	if rows >= 3 {
		for j := range dim {
			x[j] = 0
			x[dim+j] *= 1e-3
			x[2*dim+j] *= 1e4
		}
	}
	return x
}

// addNormEdgeRows is normEdgeRows for a residual add and norm: row 0 of
// both x and r zeros, row 1 of both scaled by 1e-3.
func addNormEdgeRows(x, r []float32, rows, dim int) ([]float32, []float32) {
	if rows >= 3 {
		for j := range dim {
			x[j], r[j] = 0, 0
			x[dim+j] *= 1e-3
			r[dim+j] *= 1e-3
		}
	}
	return x, r
}
