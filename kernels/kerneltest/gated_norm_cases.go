package kerneltest

import "github.com/grpo-dev/grpo/kernels"

// gatedNormShape is one call of a gated norm: rows × dim in groups (1:
// the whole row), w's dtype, out aliasing x.
type gatedNormShape struct {
	rows, dim, groups int
	w                 kernels.DType
	alias             bool
}

// gatedNorm is one of the gated norms (LinearOps.GatedRMSNorm: norm then
// gate; SSMOps.GroupedGatedRMSNorm: gate then norm, in groups), whose
// cases are the same: the forward (out and rstd) against its reference,
// the backward (dx, dz) against its reference and finite differences of
// the backend's own forward.
type gatedNorm struct {
	op   string
	seed uint64
	name func(gatedNormShape) string

	forward  func(b kernels.Backend, out, rstd, x, z, w kernels.Buffer, s gatedNormShape)
	backward func(b kernels.Backend, dx, dz, dy, x, z, w, rstd kernels.Buffer, s gatedNormShape)
	ref      func(x, z, w []float64, s gatedNormShape) (out, rstd []float64)
	refBack  func(dy, x, z, w, rstd []float64, s gatedNormShape) (dx, dz []float64)
}

func (g gatedNorm) cases(shapes []gatedNormShape) []Case {
	var cs, bs []Case
	for i, s := range shapes {
		s, seed, name := s, g.seed+uint64(i), g.name(s)
		cs = append(cs, Case{Op: g.op, Name: name, check: func(b kernels.Backend) error {
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
			want, wantR := g.ref(x.values(), z.values(), w.values(), s)
			g.forward(b, out.view, rstd.view, x.view, z.view, w.view, s)
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
			_, rv := g.ref(x.values(), z.values(), w.values(), s)
			rstd := e.in("rstd", f32s(rv))
			dy := e.in("dy", e.uniform(s.rows*s.dim, 1))
			dx, dz := e.out("dx", nans(s.rows*s.dim)), e.out("dz", nans(s.rows*s.dim))
			wx, wz := g.refBack(dy.values(), x.values(), z.values(), w.values(), rstd.values(), s)
			g.backward(b, dx.view, dz.view, dy.view, x.view, z.view, w.view, rstd.view, s)
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
				g.forward(b, out.view, nil, x.view, z.view, w.view, s)
				if err := b.Sync(); err != nil {
					return 0, 0, err
				}
				l, a := dotLoss(r, out.result(b))
				return l, a, nil
			})
		}
		bs = append(bs, Case{Op: g.op + "Backward", Name: name, check: func(b kernels.Backend) error { return run(b, false) }})
		bs = append(bs, Case{Op: g.op + "Backward", Name: "fd," + name, check: func(b kernels.Backend) error { return run(b, true) }})
	}
	return append(cs, bs...)
}
