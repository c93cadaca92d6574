package kerneltest

import (
	"fmt"
	"math/rand/v2"

	"github.com/grpo-dev/grpo/kernels"
)

// fillCases overwrite NaN with zero, a negative value and a large one.
func fillCases() []Case {
	var cs []Case
	for i, n := range []int{1, 7, 1000} {
		for _, v := range []float32{0, -2.5, 3e38} {
			n, v, seed := n, v, uint64(2000+i)
			cs = append(cs, trainCase("Fill", fmt.Sprintf("n=%d,value=%g", n, v), func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				x := e.out("x", nans(n))
				want := make([]float64, n)
				for j := range want {
					want[j] = float64(v)
				}
				tb.Fill(x.view, v, n)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("x", x.result(b), want, tolExact)
			}))
		}
	}
	return cs
}

// scaleCases are bit-exact: the product of two float32 values is exact in
// float64, so rounding it to float32 once is what a float32 multiply
// gives.
func scaleCases() []Case {
	var cs []Case
	for i, n := range []int{1, 7, 1001} {
		for _, alpha := range []float32{0, -1.5, 1.0 / 3} {
			n, alpha, seed := n, alpha, uint64(2100+i)
			cs = append(cs, trainCase("Scale", fmt.Sprintf("n=%d,alpha=%g", n, alpha), func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				x := e.out("x", e.uniform(n, 10))
				want := x.values()
				for j, v := range want {
					want[j] = float64(float32(v * float64(alpha)))
				}
				tb.Scale(x.view, alpha, n)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("x", x.result(b), want, tolExact)
			}))
		}
	}
	return cs
}

// sumSquaresValues are the inputs of the SumSquares cases: uniform in
// [−1, 1), so 10⁶ of them sum to ~3.3e5, where a float32 accumulator has
// lost ~1e-4 relative (train_test.go measures it).
func sumSquaresValues(seed uint64, n int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(2*rng.Float64() - 1)
	}
	return v
}

func sumSquaresCases() []Case {
	var cs []Case
	for i, n := range []int{1, 7, 1000, 1000000} {
		n, seed := n, uint64(2200+i)
		cs = append(cs, trainCase("SumSquares", fmt.Sprintf("n=%d", n), func(b kernels.Backend, tb kernels.TrainOps) error {
			e := newEnv(b, seed)
			defer e.free()
			x := e.in("x", sumSquaresValues(seed, n))
			out := e.out("out", nans(1))
			want := RefSumSquares(x.values())
			tb.SumSquares(out.view, x.view, n)
			if err := e.checkAll(); err != nil {
				return err
			}
			return Compare("out", out.result(b), []float64{want}, tolSumSquares)
		}))
	}
	return cs
}

// rmsNormBackwardCases cover dim = 1, odd and model-sized widths, BF16
// weights, rows whose mean square is at or below eps (all-zero, 1e-3) and
// large rows, accumulation into existing values, and dx aliasing dy. They
// compare row by row, so the large gradient of the all-zero row (rstd =
// 1/√eps) does not hide an error in the others.
func rmsNormBackwardCases() []Case {
	type shape struct {
		rows, dim int
		eps       float32
		w         kernels.DType
		mode      string // "overwrite", "accumulate" or "dx=dy"
	}
	shapes := []shape{
		{1, 1, 1e-6, kernels.F32, "overwrite"},
		{3, 7, 1e-5, kernels.F32, "accumulate"},
		{5, 64, 1e-6, kernels.BF16, "dx=dy"},
		{4, 1000, 1e-6, kernels.F32, "overwrite"},
		{2, 1024, 1e-5, kernels.BF16, "accumulate"},
		{3, 256, 1e-6, kernels.F32, "dx=dy"},
	}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(2300+i)
		cs = append(cs, trainCase("RMSNormBackward", fmt.Sprintf("rows=%d,dim=%d,eps=%g,w=%v,%s", s.rows, s.dim, s.eps, s.w, s.mode),
			func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				xv := normEdgeRows(e.uniform(s.rows*s.dim, 1), s.rows, s.dim)
				x := e.in("x", xv)
				w := e.floats("w", s.w, e.uniform(s.dim, 1.5), true)
				_, rstdv := RefRMSNorm(x.values(), w.values(), s.rows, s.dim, float64(s.eps))
				rstd := e.in("rstd", f32s(rstdv))
				dyv := e.uniform(s.rows*s.dim, 1)
				var dy, dx *operand
				switch s.mode {
				case "dx=dy":
					dy = e.out("dy", dyv)
					dx = dy
				case "accumulate":
					dy = e.in("dy", dyv)
					dx = e.out("dx", e.uniform(s.rows*s.dim, 1))
				default:
					dy = e.in("dy", dyv)
					dx = e.out("dx", nans(s.rows*s.dim))
				}
				want := RefRMSNormBackward(dy.values(), x.values(), w.values(), rstd.values(), s.rows, s.dim)
				if s.mode == "accumulate" {
					want = RefAdd(want, dx.values())
				}
				tb.RMSNormBackward(dx.view, nil, dy.view, x.view, w.view, rstd.view, s.rows, s.dim, s.mode == "accumulate")
				if err := e.checkAll(); err != nil {
					return err
				}
				got := dx.result(b)
				for r := 0; r < s.rows; r++ {
					row := r * s.dim
					if err := Compare(fmt.Sprintf("dx row %d", r), got[row:row+s.dim], want[row:row+s.dim], tolReduction); err != nil {
						return err
					}
				}
				return nil
			}))
	}
	for i, s := range []shape{{4, 64, 1e-5, kernels.F32, ""}, {2, 1000, 1e-6, kernels.BF16, ""}} {
		s, seed := s, uint64(2350+i)
		cs = append(cs, trainCase("RMSNormBackward", fmt.Sprintf("fd,rows=%d,dim=%d,w=%v", s.rows, s.dim, s.w),
			func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				xv := e.uniform(s.rows*s.dim, 1)
				x := e.in("x", xv)
				w := e.floats("w", s.w, e.uniform(s.dim, 1.5), true)
				r := e.uniform(s.rows*s.dim, 1)
				dy := e.in("dy", r)
				y := e.out("y", nans(s.rows*s.dim))
				rstd := e.out("rstd", nans(s.rows))
				dx := e.out("dx", nans(s.rows*s.dim))
				b.RMSNorm(y.view, rstd.view, x.view, w.view, s.rows, s.dim, s.eps)
				tb.RMSNormBackward(dx.view, nil, dy.view, x.view, w.view, rstd.view, s.rows, s.dim, false)
				if err := e.checkAll(); err != nil {
					return err
				}
				loss := func() (float64, float64, error) {
					b.RMSNorm(y.view, nil, x.view, w.view, s.rows, s.dim, s.eps)
					l, labs := dotLoss(r, y.result(b))
					return l, labs, b.Sync()
				}
				return checkFD(e, 1e-2, []fdInput{{op: x, x: xv, grad: dx.result(b)}}, loss)
			}))
	}
	return cs
}

// swiGLUBackwardCases include gates of ±30, ±90 and ±1000, where σ(g) or
// 1 − σ(g) computed as a ratio of exponentials is Inf/Inf = NaN, and
// dgate, dup aliasing gate, up (the model overwrites the saved
// activations with their gradients).
func swiGLUBackwardCases() []Case {
	var cs []Case
	for i, n := range []int{1, 13, 1000} {
		for _, alias := range []bool{false, true} {
			n, alias, seed := n, alias, uint64(2400+i)
			cs = append(cs, trainCase("SwiGLUBackward", fmt.Sprintf("n=%d,alias=%v", n, alias), func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				gv := e.uniform(n, 8)
				extremes := []float32{-1000, -90, -30, -1.2785, -1e-3, 0, 1e-3, 30, 90, 1000}
				if n >= len(extremes) {
					copy(gv, extremes)
				}
				uv := e.uniform(n, 2)
				dy := e.in("dy", e.uniform(n, 1))
				var gate, up, dgate, dup *operand
				if alias {
					gate, up = e.out("gate", gv), e.out("up", uv)
					dgate, dup = gate, up
				} else {
					gate, up = e.in("gate", gv), e.in("up", uv)
					dgate, dup = e.out("dgate", nans(n)), e.out("dup", nans(n))
				}
				wantG, wantU := RefSwiGLUBackward(dy.values(), gate.values(), up.values())
				tb.SwiGLUBackward(dgate.view, dup.view, dy.view, gate.view, up.view, n)
				if err := e.checkAll(); err != nil {
					return err
				}
				if err := Compare("dgate", dgate.result(b), wantG, tolElementwise); err != nil {
					return err
				}
				return Compare("dup", dup.result(b), wantU, tolElementwise)
			}))
		}
	}
	n, seed := 500, uint64(2450)
	cs = append(cs, trainCase("SwiGLUBackward", fmt.Sprintf("fd,n=%d", n), func(b kernels.Backend, tb kernels.TrainOps) error {
		e := newEnv(b, seed)
		defer e.free()
		gv, uv, r := e.uniform(n, 6), e.uniform(n, 2), e.uniform(n, 1)
		gate, up, dy := e.in("gate", gv), e.in("up", uv), e.in("dy", r)
		y, dgate, dup := e.out("y", nans(n)), e.out("dgate", nans(n)), e.out("dup", nans(n))
		tb.SwiGLUBackward(dgate.view, dup.view, dy.view, gate.view, up.view, n)
		if err := e.checkAll(); err != nil {
			return err
		}
		loss := func() (float64, float64, error) {
			b.SwiGLU(y.view, gate.view, up.view, n)
			l, labs := dotLoss(r, y.result(b))
			return l, labs, b.Sync()
		}
		return checkFD(e, 1e-2, []fdInput{
			{op: gate, x: gv, grad: dgate.result(b)},
			{op: up, x: uv, grad: dup.result(b)},
		}, loss)
	}))
	return cs
}

// sigmoidGateBackwardCases include the extreme gates of swiGLUBackwardCases
// (where 1 − σ(g) computed as a difference loses everything), dx aliasing
// dy or x and dgate aliasing gate (the model overwrites saved activations
// with their gradients), and a finite-difference check of the forward.
func sigmoidGateBackwardCases() []Case {
	var cs []Case
	for i, n := range []int{1, 13, 1000} {
		for _, alias := range []string{"none", "dx=dy", "dx=x,dgate=gate"} {
			n, alias, seed := n, alias, uint64(2460+i)
			cs = append(cs, trainCase("SigmoidGateBackward", fmt.Sprintf("n=%d,alias=%s", n, alias), func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				gv := e.uniform(n, 8)
				extremes := []float32{-1000, -90, -30, -1.2785, -1e-3, 0, 1e-3, 30, 90, 1000}
				if n >= len(extremes) {
					copy(gv, extremes)
				}
				xv, yv := e.uniform(n, 2), e.uniform(n, 1)
				var dy, x, gate, dx, dgate *operand
				switch alias {
				case "dx=dy":
					dy, x, gate = e.out("dy", yv), e.in("x", xv), e.in("gate", gv)
					dx, dgate = dy, e.out("dgate", nans(n))
				case "dx=x,dgate=gate":
					dy, x, gate = e.in("dy", yv), e.out("x", xv), e.out("gate", gv)
					dx, dgate = x, gate
				default:
					dy, x, gate = e.in("dy", yv), e.in("x", xv), e.in("gate", gv)
					dx, dgate = e.out("dx", nans(n)), e.out("dgate", nans(n))
				}
				wantX, wantG := RefSigmoidGateBackward(dy.values(), x.values(), gate.values())
				tb.SigmoidGateBackward(dx.view, dgate.view, dy.view, x.view, gate.view, n)
				if err := e.checkAll(); err != nil {
					return err
				}
				if err := Compare("dx", dx.result(b), wantX, tolElementwise); err != nil {
					return err
				}
				return Compare("dgate", dgate.result(b), wantG, tolElementwise)
			}))
		}
	}
	n, seed := 500, uint64(2470)
	cs = append(cs, trainCase("SigmoidGateBackward", fmt.Sprintf("fd,n=%d", n), func(b kernels.Backend, tb kernels.TrainOps) error {
		e := newEnv(b, seed)
		defer e.free()
		gv, xv, r := e.uniform(n, 6), e.uniform(n, 2), e.uniform(n, 1)
		gate, x, dy := e.in("gate", gv), e.in("x", xv), e.in("dy", r)
		y, dx, dgate := e.out("y", nans(n)), e.out("dx", nans(n)), e.out("dgate", nans(n))
		tb.SigmoidGateBackward(dx.view, dgate.view, dy.view, x.view, gate.view, n)
		if err := e.checkAll(); err != nil {
			return err
		}
		loss := func() (float64, float64, error) {
			b.SigmoidGate(y.view, x.view, gate.view, n)
			l, labs := dotLoss(r, y.result(b))
			return l, labs, b.Sync()
		}
		return checkFD(e, 1e-2, []fdInput{
			{op: x, x: xv, grad: dx.result(b)},
			{op: gate, x: gv, grad: dgate.result(b)},
		}, loss)
	}))
	return cs
}

// ropeBackwardCases check that RoPE with inverse set is RoPE's backward:
// for L = Σ r ⊙ RoPE(x), dx = RoPE⁻¹(r), against finite differences of
// the forward, at positions up to 32767. (inverse∘forward = identity is
// the forward suite's "roundtrip" case.)
func ropeBackwardCases() []Case {
	type shape struct {
		nTok, nHead, headDim int
		base                 float64
	}
	var cs []Case
	for i, s := range []shape{{5, 3, 16, 10000}, {3, 4, 128, 500000}} {
		s, seed := s, uint64(2500+i)
		cs = append(cs, trainCase("RoPEBackward", fmt.Sprintf("fd,nTok=%d,nHead=%d,headDim=%d,base=%g", s.nTok, s.nHead, s.headDim, s.base),
			func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				n := s.nTok * s.nHead * s.headDim
				posv, fv := ropeInputs(e, s.nTok, s.headDim, s.base)
				pos, inv := e.ints("pos", posv), e.in("invFreq", fv)
				xv, r := e.uniform(n, 2), e.uniform(n, 1)
				x, y, dx := e.in("x", xv), e.out("y", nans(n)), e.out("dx", r)
				b.RoPE(dx.view, pos.view, inv.view, s.nTok, s.nHead, s.headDim, true)
				if err := e.checkAll(); err != nil {
					return err
				}
				if err := Compare("dx", dx.result(b), RefRoPE(dx.values(), posv, fv, s.nTok, s.nHead, s.headDim, true), tolElementwise); err != nil {
					return err
				}
				loss := func() (float64, float64, error) {
					b.Copy(y.view, x.view)
					b.RoPE(y.view, pos.view, inv.view, s.nTok, s.nHead, s.headDim, false)
					l, labs := dotLoss(r, y.result(b))
					return l, labs, b.Sync()
				}
				return checkFD(e, 1e-2, []fdInput{{op: x, x: xv, grad: dx.result(b)}}, loss)
			}))
	}
	return cs
}
