package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Add and AddBias over bf16 activations (a bf16 model's tensors between
// ops): every mix of F32 and BF16 operands Add takes, and a BF16 x for
// AddBias with either bias. The sum is f32 and a BF16 output is rounded
// once, so an F32 output is held to tolRounded and a BF16 one to
// CompareBF16 at tolRounded, with every stored value a bf16 value (a
// backend that skips the rounding, or rounds an operand or the sum
// twice, fails). n and rows·cols are not multiples of a block.

// addBF16Cases cover the seven (out, a, b) dtype mixes other than all
// F32, each with a separate output and with out aliasing a or b where
// their dtypes match. The residual add of a bf16 block output (out F32,
// a F32, b BF16) is the one a bf16 model's step runs most.
func addBF16Cases() []Case {
	var cs []Case
	f, h := kernels.F32, kernels.BF16
	for ci, dts := range [][3]kernels.DType{{f, f, h}, {f, h, f}, {f, h, h}, {h, f, f}, {h, f, h}, {h, h, f}, {h, h, h}} {
		aliases := []string{"none"}
		if dts[0] == dts[1] {
			aliases = append(aliases, "out=a")
		}
		if dts[0] == dts[2] {
			aliases = append(aliases, "out=b")
		}
		for ni, n := range []int{5, 1001} {
			for _, alias := range aliases {
				dts, n, alias, seed := dts, n, alias, uint64(1700+10*ci+ni)
				cs = append(cs, Case{Op: "Add", Name: fmt.Sprintf("n=%d,out=%v,a=%v,b=%v,alias=%s", n, dts[0], dts[1], dts[2], alias),
					check: func(b kernels.Backend) error {
						e := newEnv(b, seed)
						defer e.free()
						av, bv := e.uniform(n, 4), e.uniform(n, 4)
						var a, bb, out *operand
						switch alias {
						case "out=a":
							a, bb = e.floats("a", dts[1], av, false), e.floats("b", dts[2], bv, true)
							out = a
						case "out=b":
							a, bb = e.floats("a", dts[1], av, true), e.floats("b", dts[2], bv, false)
							out = bb
						default:
							a, bb = e.floats("a", dts[1], av, true), e.floats("b", dts[2], bv, true)
							out = e.floats("out", dts[0], nans(n), false)
						}
						want := RefAdd(a.values(), bb.values())
						b.Add(out.view, a.view, bb.view, n)
						if err := e.checkAll(); err != nil {
							return err
						}
						return compareActivation("out", out, b, want)
					}})
			}
		}
	}
	return cs
}

// addBiasBF16Cases cover a BF16 x with an F32 and a BF16 bias.
func addBiasBF16Cases() []Case {
	var cs []Case
	for i, s := range [][2]int{{5, 7}, {33, 130}} {
		for j, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
			rows, cols, dt, seed := s[0], s[1], dt, uint64(1800+10*i+j)
			cs = append(cs, Case{Op: "AddBias", Name: fmt.Sprintf("rows=%d,cols=%d,x=bf16,bias=%v", rows, cols, dt),
				check: func(b kernels.Backend) error {
					e := newEnv(b, seed)
					defer e.free()
					x := e.floats("x", kernels.BF16, e.uniform(rows*cols, 3), false)
					bias := e.floats("bias", dt, e.uniform(cols, 1), true)
					want := RefAddBias(x.values(), bias.values(), rows, cols)
					b.AddBias(x.view, bias.view, rows, cols)
					if err := e.checkAll(); err != nil {
						return err
					}
					return compareActivation("x", x, b, want)
				}})
		}
	}
	return cs
}

// compareActivation checks an output of one rounding per element against
// want: within tolRounded for F32; for BF16, every stored value a bf16
// value and the bf16 rounding of a value within tolRounded (CompareBF16
// alone would accept an unrounded f32 between the two roundings).
func compareActivation(what string, o *operand, b kernels.Backend, want []float64) error {
	got := o.result(b)
	if o.dt != kernels.BF16 {
		return Compare(what, got, want, tolRounded)
	}
	for i, g := range got {
		if RoundBF16(g) != g {
			return fmt.Errorf("%s[%d] = %.8g is not a bf16 value", what, i, g)
		}
	}
	return CompareBF16(what, got, want, tolRounded)
}
