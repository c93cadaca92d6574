package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// swiGLURowsBackwardBF16Cases run every combination of dtypes of dy,
// gateUp and dGateUp with a BF16 among them (all F32 is
// swiGLURowsBackwardCases'), each over a ragged shape (elements not a
// multiple of the 256-thread block) and one with the overflow-prone gates.
// The reference takes the stored (rounded) inputs; a BF16 dGateUp must be
// the rounding of a value within tolElementwise of it, and bf16 values
// only.
func swiGLURowsBackwardBF16Cases() []Case {
	f, h := kernels.F32, kernels.BF16
	var cs []Case
	for combo := 1; combo < 8; combo++ {
		dt := func(bit int) kernels.DType {
			if combo&bit != 0 {
				return h
			}
			return f
		}
		dDT, yDT, guDT := dt(1), dt(2), dt(4)
		for i, s := range [][2]int{{5, 77}, {3, 13}} {
			rows, width, seed := s[0], s[1], uint64(5450+10*combo+i)
			name := fmt.Sprintf("rows=%d,width=%d,dGateUp=%v,dy=%v,gateUp=%v", rows, width, dDT, yDT, guDT)
			cs = append(cs, trainCase("SwiGLURowsBackward", name, func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				gu := e.uniform(rows*2*width, 8)
				if width >= 9 {
					copy(gu, []float32{-1000, -90, -30, -1e-3, 0, 1e-3, 30, 90, 1000})
				}
				gateUp := e.floats("gateUp", guDT, gu, true)
				dy := e.floats("dy", yDT, e.uniform(rows*width, 2), true)
				d := e.floats("dGateUp", dDT, nans(rows*2*width), false)
				want := RefSwiGLURowsBackward(dy.values(), gateUp.values(), rows, width)
				tb.SwiGLURowsBackward(d.view, dy.view, gateUp.view, rows, width)
				if err := e.checkAll(); err != nil {
					return err
				}
				if dDT == kernels.F32 {
					return Compare("dGateUp", d.result(b), want, tolElementwise)
				}
				return compareBF16Stored("dGateUp", d.result(b), want, tolElementwise)
			}))
		}
	}
	return cs
}

// rmsNormBackwardBF16Cases: a BF16 dy (the backward GEMM's bf16 output)
// and the bf16 copy of dx (dxBF16), overwriting and accumulating, with dx
// aliasing an F32 dy, rows wider than the block and dims that are not a
// multiple of 32, and the zero, eps-scale and large rows of
// rmsNormBackwardCases. dx is compared row by row as there; dxBF16 must
// be exactly the final dx rounded to bf16, so also within the reference's
// bf16 rounding, and bf16 values only.
func rmsNormBackwardBF16Cases() []Case {
	type shape struct {
		rows, dim int
		w, dy     kernels.DType
		cast      bool
		mode      string // "overwrite", "accumulate" or "dx=dy"
	}
	f, h := kernels.F32, kernels.BF16
	shapes := []shape{
		{5, 100, h, h, true, "accumulate"},
		{3, 33, f, f, true, "overwrite"},
		{7, 1000, f, h, false, "overwrite"},
		{2, 1, f, h, true, "accumulate"},
		{4, 300, h, f, true, "dx=dy"},
		{9, 65, h, h, true, "overwrite"},
	}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(2370+i)
		name := fmt.Sprintf("rows=%d,dim=%d,w=%v,dy=%v,cast=%v,%s", s.rows, s.dim, s.w, s.dy, s.cast, s.mode)
		cs = append(cs, trainCase("RMSNormBackward", name, func(b kernels.Backend, tb kernels.TrainOps) error {
			e := newEnv(b, seed)
			defer e.free()
			xv := normEdgeRows(e.uniform(s.rows*s.dim, 1), s.rows, s.dim)
			x := e.in("x", xv)
			w := e.floats("w", s.w, e.uniform(s.dim, 1.5), true)
			_, rstdv := RefRMSNorm(x.values(), w.values(), s.rows, s.dim, 1e-6)
			rstd := e.in("rstd", f32s(rstdv))
			dyv := e.uniform(s.rows*s.dim, 1)
			var dy, dx, cast *operand
			switch s.mode {
			case "dx=dy":
				dy = e.out("dy", dyv)
				dx = dy
			case "accumulate":
				dy = e.floats("dy", s.dy, dyv, true)
				dx = e.out("dx", e.uniform(s.rows*s.dim, 1))
			default:
				dy = e.floats("dy", s.dy, dyv, true)
				dx = e.out("dx", nans(s.rows*s.dim))
			}
			if s.cast {
				cast = e.floats("dxBF16", kernels.BF16, nans(s.rows*s.dim), false)
			}
			want := RefRMSNormBackward(dy.values(), x.values(), w.values(), rstd.values(), s.rows, s.dim)
			if s.mode == "accumulate" {
				want = RefAdd(want, dx.values())
			}
			tb.RMSNormBackward(dx.view, view(cast), dy.view, x.view, w.view, rstd.view, s.rows, s.dim, s.mode == "accumulate")
			if err := e.checkAll(); err != nil {
				return err
			}
			got := dx.result(b)
			var gotCast []float32
			if cast != nil {
				if err := checkCast(b, cast, got); err != nil {
					return err
				}
				gotCast = cast.result(b)
			}
			for r := 0; r < s.rows; r++ {
				row := r * s.dim
				if err := Compare(fmt.Sprintf("dx row %d", r), got[row:row+s.dim], want[row:row+s.dim], tolReduction); err != nil {
					return err
				}
				if cast == nil {
					continue
				}
				if err := compareBF16Stored(fmt.Sprintf("dxBF16 row %d", r), gotCast[row:row+s.dim], want[row:row+s.dim], tolReduction); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	return cs
}
