package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// addBiasCases cover F32 and BF16 biases (Qwen2's q/k/v biases are
// loaded as BF16).
func addBiasCases() []Case {
	shapes := [][2]int{{1, 1}, {5, 7}, {33, 130}}
	var cs []Case
	for i, s := range shapes {
		dt := kernels.F32
		if i == 2 {
			dt = kernels.BF16
		}
		rows, cols, seed := s[0], s[1], uint64(600+i)
		cs = append(cs, Case{Op: "AddBias", Name: fmt.Sprintf("rows=%d,cols=%d,bias=%v", rows, cols, dt),
			check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				x := e.out("x", e.uniform(rows*cols, 3))
				bias := e.floats("bias", dt, e.uniform(cols, 1), true)
				want := RefAddBias(x.values(), bias.values(), rows, cols)
				b.AddBias(x.view, bias.view, rows, cols)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("x", x.result(b), want, tolRounded)
			}})
	}
	return cs
}

// addCases cover separate output and output aliasing either input.
func addCases() []Case {
	var cs []Case
	for i, n := range []int{1, 7, 1001} {
		for _, alias := range []string{"none", "out=a", "out=b"} {
			n, alias, seed := n, alias, uint64(700+10*i)
			cs = append(cs, Case{Op: "Add", Name: fmt.Sprintf("n=%d,alias=%s", n, alias),
				check: func(b kernels.Backend) error {
					e := newEnv(b, seed)
					defer e.free()
					av, bv := e.uniform(n, 4), e.uniform(n, 4)
					var a, bb, out *operand
					switch alias {
					case "out=a":
						a, bb = e.out("a", av), e.in("b", bv)
						out = a
					case "out=b":
						a, bb = e.in("a", av), e.out("b", bv)
						out = bb
					default:
						a, bb = e.in("a", av), e.in("b", bv)
						out = e.out("out", nans(n))
					}
					want := RefAdd(a.values(), bb.values())
					b.Add(out.view, a.view, bb.view, n)
					if err := e.checkAll(); err != nil {
						return err
					}
					return Compare("out", out.result(b), want, tolRounded)
				}})
		}
	}
	return cs
}

// swiGLUCases include gates of ±30, ±90 and ±1000, where computing σ with
// an overflowing exp, or as e^g/(1+e^g), yields Inf or NaN, and out
// aliasing gate or up.
func swiGLUCases() []Case {
	var cs []Case
	for i, n := range []int{1, 13, 1000} {
		for _, alias := range []string{"none", "out=gate", "out=up"} {
			n, alias, seed := n, alias, uint64(800+10*i)
			cs = append(cs, Case{Op: "SwiGLU", Name: fmt.Sprintf("n=%d,alias=%s", n, alias),
				check: func(b kernels.Backend) error {
					e := newEnv(b, seed)
					defer e.free()
					gv := e.uniform(n, 8)
					extremes := []float32{-1000, -90, -30, -1e-3, 0, 1e-3, 30, 90, 1000}
					if n >= len(extremes) {
						copy(gv, extremes)
					}
					uv := e.uniform(n, 2)
					var gate, up, out *operand
					switch alias {
					case "out=gate":
						gate, up = e.out("gate", gv), e.in("up", uv)
						out = gate
					case "out=up":
						gate, up = e.in("gate", gv), e.out("up", uv)
						out = up
					default:
						gate, up = e.in("gate", gv), e.in("up", uv)
						out = e.out("out", nans(n))
					}
					want := RefSwiGLU(gate.values(), up.values())
					b.SwiGLU(out.view, gate.view, up.view, n)
					if err := e.checkAll(); err != nil {
						return err
					}
					return Compare("out", out.result(b), want, tolElementwise)
				}})
		}
	}
	return cs
}

// sigmoidGateCases include gates of ±30, ±90 and ±1000, where σ computed
// as e^g/(1+e^g) is Inf/Inf = NaN, and out aliasing x or gate.
func sigmoidGateCases() []Case {
	var cs []Case
	for i, n := range []int{1, 13, 1000} {
		for _, alias := range []string{"none", "out=x", "out=gate"} {
			n, alias, seed := n, alias, uint64(850+10*i)
			cs = append(cs, Case{Op: "SigmoidGate", Name: fmt.Sprintf("n=%d,alias=%s", n, alias),
				check: func(b kernels.Backend) error {
					e := newEnv(b, seed)
					defer e.free()
					gv := e.uniform(n, 8)
					extremes := []float32{-1000, -90, -30, -1e-3, 0, 1e-3, 30, 90, 1000}
					if n >= len(extremes) {
						copy(gv, extremes)
					}
					xv := e.uniform(n, 2)
					var x, gate, out *operand
					switch alias {
					case "out=x":
						x, gate = e.out("x", xv), e.in("gate", gv)
						out = x
					case "out=gate":
						x, gate = e.in("x", xv), e.out("gate", gv)
						out = gate
					default:
						x, gate = e.in("x", xv), e.in("gate", gv)
						out = e.out("out", nans(n))
					}
					want := RefSigmoidGate(x.values(), gate.values())
					b.SigmoidGate(out.view, x.view, gate.view, n)
					if err := e.checkAll(); err != nil {
						return err
					}
					return Compare("out", out.result(b), want, tolElementwise)
				}})
		}
	}
	return cs
}
