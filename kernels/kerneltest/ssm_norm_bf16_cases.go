package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The grouped gated norm over BF16 activations (a bf16 model's Mamba-2
// layer): GroupedGatedRMSNorm with every F32/BF16 combination of out, x
// and z but the all-F32 one (and out aliasing x where both are BF16),
// its backward with every combination of dx, dz, dy, x and z; rstd stays
// F32. Each on 5 rows of 24 in 3 groups (f32 w) and Nemotron-3-Nano-like
// rows of 4096 in 8 groups (bf16 w). A BF16 output must be a bf16 value,
// the rounding of one within tolReduction (CompareStored).

// groupedNormBF16Shapes are the shapes of the bf16 cases.
var groupedNormBF16Shapes = []gatedNormShape{{5, 24, 3, kernels.F32, false}, {4, 4096, 8, kernels.BF16, false}}

func groupedGatedRMSNormBF16Cases() []Case {
	const eps = 1e-5
	var cs []Case
	names := []string{"out", "x", "z"}
	for mask := 1; mask < 8; mask++ {
		dts := dtypesOf(mask, 3)
		for j, s := range groupedNormBF16Shapes {
			for _, alias := range []bool{false, true} {
				if alias && mask&3 != 3 {
					continue
				}
				seed := uint64(7200 + 4*mask + 2*j)
				name := fmt.Sprintf("rows=%d,dim=%d,groups=%d,w=%v,%s", s.rows, s.dim, s.groups, s.w, dtypeNames(names, dts))
				if alias {
					name += ",alias=out=x"
				}
				cs = append(cs, Case{Op: "GroupedGatedRMSNorm", Name: name, check: func(b kernels.Backend) error {
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
					want, wantR := RefGroupedGatedRMSNorm(x.values(), z.values(), w.values(), s.rows, s.dim, s.groups, eps)
					b.GroupedGatedRMSNorm(out.view, rstd.view, x.view, z.view, w.view, s.rows, s.dim, s.groups, eps)
					if err := e.checkAll(); err != nil {
						return err
					}
					if err := CompareStored("out", dts[0], out.result(b), want, tolReduction); err != nil {
						return err
					}
					return Compare("rstd", rstd.result(b), wantR, tolReduction)
				}})
			}
		}
	}
	return cs
}

func groupedGatedRMSNormBackwardBF16Cases() []Case {
	var cs []Case
	names := []string{"dx", "dz", "dy", "x", "z"}
	for mask := 1; mask < 32; mask++ {
		dts := dtypesOf(mask, 5)
		for j, s := range groupedNormBF16Shapes {
			seed := uint64(7400 + 2*mask + j)
			name := fmt.Sprintf("rows=%d,dim=%d,groups=%d,w=%v,%s", s.rows, s.dim, s.groups, s.w, dtypeNames(names, dts))
			cs = append(cs, Case{Op: "GroupedGatedRMSNormBackward", Name: name, check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				x := e.floats("x", dts[3], e.uniform(s.rows*s.dim, 3), true)
				z := e.floats("z", dts[4], e.uniform(s.rows*s.dim, 4), true)
				w := e.floats("w", s.w, e.uniform(s.dim, 2), true)
				_, rv := RefGroupedGatedRMSNorm(x.values(), z.values(), w.values(), s.rows, s.dim, s.groups, 1e-5)
				rstd := e.in("rstd", f32s(rv))
				dy := e.floats("dy", dts[2], e.uniform(s.rows*s.dim, 1), true)
				dx, dz := e.floats("dx", dts[0], nans(s.rows*s.dim), false), e.floats("dz", dts[1], nans(s.rows*s.dim), false)
				wx, wz := RefGroupedGatedRMSNormBackward(dy.values(), x.values(), z.values(), w.values(), rstd.values(), s.rows, s.dim, s.groups)
				b.GroupedGatedRMSNormBackward(dx.view, dz.view, dy.view, x.view, z.view, w.view, rstd.view, s.rows, s.dim, s.groups)
				if err := e.checkAll(); err != nil {
					return err
				}
				if err := CompareStored("dx", dts[0], dx.result(b), wx, tolReduction); err != nil {
					return err
				}
				return CompareStored("dz", dts[1], dz.result(b), wz, tolReduction)
			}})
		}
	}
	return cs
}
