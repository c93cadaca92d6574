package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// gatedRMSNormBF16Shapes are the bf16 GatedRMSNorm calls: a row narrower
// than a warp's multiple, Qwen3.5's rows (dim = dimV = 128, bf16 w) and a
// wide row.
var gatedRMSNormBF16Shapes = []gatedNormShape{{5, 24, 1, kernels.F32, false}, {64, 128, 1, kernels.BF16, false}, {3, 1000, 1, kernels.F32, false}}

// gatedRMSNormBF16Cases are GatedRMSNorm with each of out, x and z F32 or
// BF16 (every combination but the all-F32 one, out aliasing x where both
// are BF16), and GatedRMSNormBackward with each of dx, dz, dy, x and z F32
// or BF16 (every combination on the first shape, all five BF16 on the
// others); rstd stays F32. The references read the BF16 inputs' stored
// values.
func gatedRMSNormBF16Cases() (forward, backward []Case) {
	g := gatedRMSNorm()
	for i, s := range gatedRMSNormBF16Shapes {
		name := fmt.Sprintf("rows=%d,dim=%d,w=%v", s.rows, s.dim, s.w)
		for mask := 1; mask < 8; mask++ {
			for _, alias := range []bool{false, true} {
				if alias && mask&3 != 3 {
					continue
				}
				forward = append(forward, g.bf16Forward(s, dtypesOf(mask, 3), alias, uint64(8000+10*i+mask), name))
			}
		}
		for mask := 1; mask < 32; mask++ {
			if i > 0 && mask != 31 {
				continue
			}
			backward = append(backward, g.bf16Backward(s, dtypesOf(mask, 5), uint64(8100+100*i+mask), name))
		}
	}
	return forward, backward
}

// bf16Forward is g's forward case on s with out, x and z of dtypes dts
// (out aliasing x when alias), named name and the dtypes; rstd stays F32.
// The references read the BF16 inputs' stored values, and a BF16 out
// must be a bf16 value, the rounding of one within tolReduction
// (CompareStored).
func (g gatedNorm) bf16Forward(s gatedNormShape, dts []kernels.DType, alias bool, seed uint64, name string) Case {
	name += "," + dtypeNames([]string{"out", "x", "z"}, dts)
	if alias {
		name += ",alias=out=x"
	}
	return Case{Op: g.op, Name: name, check: func(b kernels.Backend) error {
		e := newEnv(b, seed)
		defer e.free()
		x := e.floats("x", dts[1], e.uniform(s.rows*s.dim, 3), !alias)
		out := x
		if !alias {
			out = e.floats("out", dts[0], nans(s.rows*s.dim), false)
		}
		z := e.floats("z", dts[2], e.uniform(s.rows*s.dim, 4), true)
		w := e.floats("w", s.w, e.uniform(s.dim, 2), true)
		rstd := e.out("rstd", nans(s.rows*s.groups))
		want, wantR := g.ref(x.values(), z.values(), w.values(), s)
		g.forward(b, out.view, rstd.view, x.view, z.view, w.view, s)
		if err := e.checkAll(); err != nil {
			return err
		}
		if err := CompareStored("out", dts[0], out.result(b), want, tolReduction); err != nil {
			return err
		}
		return Compare("rstd", rstd.result(b), wantR, tolReduction)
	}}
}

// bf16Backward is g's backward case on s with dx, dz, dy, x and z of
// dtypes dts, as bf16Forward's.
func (g gatedNorm) bf16Backward(s gatedNormShape, dts []kernels.DType, seed uint64, name string) Case {
	name += "," + dtypeNames([]string{"dx", "dz", "dy", "x", "z"}, dts)
	return Case{Op: g.op + "Backward", Name: name, check: func(b kernels.Backend) error {
		e := newEnv(b, seed)
		defer e.free()
		x := e.floats("x", dts[3], e.uniform(s.rows*s.dim, 3), true)
		z := e.floats("z", dts[4], e.uniform(s.rows*s.dim, 4), true)
		w := e.floats("w", s.w, e.uniform(s.dim, 2), true)
		_, rv := g.ref(x.values(), z.values(), w.values(), s)
		rstd := e.in("rstd", f32s(rv))
		dy := e.floats("dy", dts[2], e.uniform(s.rows*s.dim, 1), true)
		dx, dz := e.floats("dx", dts[0], nans(s.rows*s.dim), false), e.floats("dz", dts[1], nans(s.rows*s.dim), false)
		wx, wz := g.refBack(dy.values(), x.values(), z.values(), w.values(), rstd.values(), s)
		g.backward(b, dx.view, dz.view, dy.view, x.view, z.view, w.view, rstd.view, s)
		if err := e.checkAll(); err != nil {
			return err
		}
		if err := CompareStored("dx", dts[0], dx.result(b), wx, tolReduction); err != nil {
			return err
		}
		return CompareStored("dz", dts[1], dz.result(b), wz, tolReduction)
	}}
}
