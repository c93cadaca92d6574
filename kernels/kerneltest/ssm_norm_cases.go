package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// groupedGatedRMSNormCases: one group (the whole row), groups of 8 and
// of 1000 columns, Nemotron-3-Nano-like rows (4096 in 8 groups, bf16 w),
// out aliasing x; each backward against the reference and finite
// differences. Tolerance tolReduction, as GatedRMSNorm's.
func groupedGatedRMSNormCases() []Case {
	var cs, bs []Case
	for i, s := range []struct {
		rows, dim, groups int
		w                 kernels.DType
		alias             bool
	}{{1, 1, 1, kernels.F32, false}, {5, 24, 3, kernels.F32, true}, {3, 2000, 2, kernels.F32, false}, {4, 4096, 8, kernels.BF16, false}} {
		s, seed := s, uint64(6800+i)
		const eps = 1e-5
		name := fmt.Sprintf("rows=%d,dim=%d,groups=%d,w=%v,alias=%v", s.rows, s.dim, s.groups, s.w, s.alias)
		cs = append(cs, Case{Op: "GroupedGatedRMSNorm", Name: name, check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			var x, out *operand
			if s.alias {
				x = e.out("x", e.uniform(s.rows*s.dim, 3))
				out = x
			} else {
				x = e.in("x", e.uniform(s.rows*s.dim, 3))
				out = e.out("out", nans(s.rows*s.dim))
			}
			z := e.in("z", e.uniform(s.rows*s.dim, 4))
			w := e.floats("w", s.w, e.uniform(s.dim, 2), true)
			rstd := e.out("rstd", nans(s.rows*s.groups))
			want, wantR := RefGroupedGatedRMSNorm(x.values(), z.values(), w.values(), s.rows, s.dim, s.groups, eps)
			b.GroupedGatedRMSNorm(out.view, rstd.view, x.view, z.view, w.view, s.rows, s.dim, s.groups, eps)
			if err := e.checkAll(); err != nil {
				return err
			}
			if err := Compare("out", out.result(b), want, tolReduction); err != nil {
				return err
			}
			return Compare("rstd", rstd.result(b), wantR, tolReduction)
		}})
		run := func(b kernels.Backend, fd bool) error {
			e := newEnv(b, seed)
			defer e.free()
			x := e.in("x", e.uniform(s.rows*s.dim, 3))
			z := e.in("z", e.uniform(s.rows*s.dim, 4))
			w := e.floats("w", s.w, e.uniform(s.dim, 2), true)
			_, rv := RefGroupedGatedRMSNorm(x.values(), z.values(), w.values(), s.rows, s.dim, s.groups, eps)
			rstd := e.in("rstd", f32s(rv))
			dy := e.in("dy", e.uniform(s.rows*s.dim, 1))
			dx, dz := e.out("dx", nans(s.rows*s.dim)), e.out("dz", nans(s.rows*s.dim))
			wx, wz := RefGroupedGatedRMSNormBackward(dy.values(), x.values(), z.values(), w.values(), rstd.values(), s.rows, s.dim, s.groups)
			b.GroupedGatedRMSNormBackward(dx.view, dz.view, dy.view, x.view, z.view, w.view, rstd.view, s.rows, s.dim, s.groups)
			if err := e.checkAll(); err != nil {
				return err
			}
			gx, gz := dx.result(b), dz.result(b)
			if !fd {
				if err := Compare("dx", gx, wx, tolReduction); err != nil {
					return err
				}
				return Compare("dz", gz, wz, tolReduction)
			}
			out := e.out("out", nans(s.rows*s.dim))
			r := dy.result(b)
			return checkFD(e, 1e-2, []fdInput{{op: x, x: x.result(b), grad: gx}, {op: z, x: z.result(b), grad: gz}}, func() (float64, float64, error) {
				b.GroupedGatedRMSNorm(out.view, nil, x.view, z.view, w.view, s.rows, s.dim, s.groups, eps)
				if err := b.Sync(); err != nil {
					return 0, 0, err
				}
				l, a := dotLoss(r, out.result(b))
				return l, a, nil
			})
		}
		bs = append(bs, Case{Op: "GroupedGatedRMSNormBackward", Name: name, check: func(b kernels.Backend) error { return run(b, false) }})
		bs = append(bs, Case{Op: "GroupedGatedRMSNormBackward", Name: "fd," + name, check: func(b kernels.Backend) error { return run(b, true) }})
	}
	return append(cs, bs...)
}
