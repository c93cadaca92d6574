package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// compareBF16Stored checks a BF16 output: every stored value must be a
// bf16 value (CompareBF16 alone accepts an unrounded f32 that lies between
// two roundings, so a CPU twin that skips the rounding would pass it),
// and each the rounding of a value within tol of the float64 reference.
// Measured over the bf16 cases of the norms and SwiGLU (cpu's go and avx2
// paths, emu): max-abs ≤ 3.5e-3 of scale (bf16's own rounding, ≤ 2⁻⁸
// relative), and at most 16 of 6784 stored values (cpu's dGateUp; emu 0
// of 3392) the bf16 neighbour of the reference's own rounding.
func compareBF16Stored(what string, got []float32, want []float64, tol Tol) error {
	for i, g := range got {
		if RoundBF16(g) != g {
			return fmt.Errorf("%s[%d] = %.8g is not a bf16 value", what, i, g)
		}
	}
	return CompareBF16(what, got, want, tol)
}

// addRMSNormBF16Cases: the norms of a bf16 model's training step, over
// bf16 activations — r BF16 (the o_proj or down_proj GEMM's bf16 output)
// with x and sum F32, and out nil with only the bf16 copy stored — with
// dims that are not a multiple of 32 (a block's last warp partly idle),
// sum aliasing x, BF16 and F32 weights, and a zero row and a row at the
// eps scale. The reference takes r's stored (rounded) values.
func addRMSNormBF16Cases() []Case {
	type shape struct {
		rows, dim int
		r         string // "bf16", "f32" or "none"
		sumIsX    bool
		w         kernels.DType
		out       bool // the f32 out as well as the bf16 copy
	}
	shapes := []shape{
		{5, 100, "bf16", false, kernels.F32, true},
		{9, 130, "bf16", true, kernels.BF16, false},
		{4, 1000, "bf16", false, kernels.F32, false},
		{3, 33, "f32", true, kernels.BF16, false},
		{7, 65, "none", false, kernels.BF16, false},
		{1, 1, "bf16", true, kernels.F32, true},
	}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(4450+i)
		name := fmt.Sprintf("rows=%d,dim=%d,r=%s,sum=x=%v,w=%v,out=%v,cast=true", s.rows, s.dim, s.r, s.sumIsX, s.w, s.out)
		cs = append(cs, Case{Op: "AddRMSNorm", Name: name, check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			n := s.rows * s.dim
			xv, rv := addNormEdgeRows(e.uniform(n, 1), e.uniform(n, 1), s.rows, s.dim)
			var x, r, sum *operand
			if s.sumIsX {
				x = e.out("x", xv)
				sum = x
			} else {
				x = e.in("x", xv)
			}
			switch s.r {
			case "bf16":
				r = e.floats("r", kernels.BF16, rv, true)
			case "f32":
				r = e.in("r", rv)
			}
			if r != nil && sum == nil {
				sum = e.out("sum", nans(n))
			}
			w := e.floats("w", s.w, e.uniform(s.dim, 2), true)
			var out *operand
			if s.out {
				out = e.out("out", nans(n))
			}
			rstd := e.out("rstd", nans(s.rows))
			cast := e.floats("outBF16", kernels.BF16, nans(n), false)
			var rVals []float64
			if r != nil {
				rVals = r.values()
			}
			wantSum, wantOut, wantRstd := RefAddRMSNorm(x.values(), rVals, w.values(), s.rows, s.dim, 1e-6)
			b.AddRMSNorm(view(sum), view(out), cast.view, rstd.view, x.view, view(r), w.view, s.rows, s.dim, 1e-6)
			if err := e.checkAll(); err != nil {
				return err
			}
			if sum != nil {
				if err := Compare("sum", sum.result(b), wantSum, tolExact); err != nil {
					return err
				}
			}
			if err := Compare("rstd", rstd.result(b), wantRstd, tolReduction); err != nil {
				return err
			}
			if out != nil {
				gotOut := out.result(b)
				if err := Compare("out", gotOut, wantOut, tolReduction); err != nil {
					return err
				}
				if err := checkCast(b, cast, gotOut); err != nil {
					return err
				}
			}
			return compareBF16Stored("outBF16", cast.result(b), wantOut, tolReduction)
		}})
	}
	return cs
}

// swiGLURowsBF16Cases: a BF16 gateUp (the gate/up GEMM's bf16 output) and
// out nil with only the bf16 copy stored, over widths and element counts
// that are not a multiple of the 256-thread block, with the
// overflow-prone gates of swiGLURowsCases.
func swiGLURowsBF16Cases() []Case {
	type shape struct {
		rows, width int
		gateUp      kernels.DType
		out         bool
	}
	f, h := kernels.F32, kernels.BF16
	shapes := []shape{{3, 13, h, true}, {7, 500, h, false}, {5, 77, f, false}, {1, 1, h, false}, {2, 1024, h, true}}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(4550+i)
		name := fmt.Sprintf("rows=%d,width=%d,gateUp=%v,out=%v,cast=true", s.rows, s.width, s.gateUp, s.out)
		cs = append(cs, Case{Op: "SwiGLURows", Name: name, check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			n := s.rows * s.width
			gu := e.uniform(2*n, 8)
			if s.width >= 9 {
				copy(gu, []float32{-1000, -90, -30, -1e-3, 0, 1e-3, 30, 90, 1000})
			}
			gateUp := e.floats("gateUp", s.gateUp, gu, true)
			var out *operand
			if s.out {
				out = e.out("out", nans(n))
			}
			cast := e.floats("outBF16", kernels.BF16, nans(n), false)
			want := RefSwiGLURows(gateUp.values(), s.rows, s.width)
			b.SwiGLURows(view(out), cast.view, gateUp.view, s.rows, s.width)
			if err := e.checkAll(); err != nil {
				return err
			}
			if out != nil {
				got := out.result(b)
				if err := Compare("out", got, want, tolElementwise); err != nil {
					return err
				}
				if err := checkCast(b, cast, got); err != nil {
					return err
				}
			}
			return compareBF16Stored("outBF16", cast.result(b), want, tolElementwise)
		}})
	}
	return cs
}
