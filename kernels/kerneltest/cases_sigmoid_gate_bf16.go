package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// CompareStored is Compare for an F32 output and, for a BF16 one,
// CompareBF16 after checking that every stored value is a bf16 value
// (CompareBF16 alone would accept an unrounded f32 between two roundings).
func CompareStored(what string, dt kernels.DType, got []float32, want []float64, tol Tol) error {
	if dt != kernels.BF16 {
		return Compare(what, got, want, tol)
	}
	for i, g := range got {
		if RoundBF16(g) != g {
			return fmt.Errorf("%s[%d] = %.8g is not a bf16 value", what, i, g)
		}
	}
	return CompareBF16(what, got, want, tol)
}

// dtypesOf gives operand i of a combination mask its dtype: BF16 where bit
// i is set (as kernels/cuda's bf16Mask numbers them).
func dtypesOf(mask, n int) []kernels.DType {
	dts := make([]kernels.DType, n)
	for i := range dts {
		dts[i] = kernels.F32
		if mask&(1<<i) != 0 {
			dts[i] = kernels.BF16
		}
	}
	return dts
}

// dtypeNames names a combination's operands' dtypes, as "out=bf16,x=f32".
func dtypeNames(names []string, dts []kernels.DType) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ","
		}
		s += n + "=" + dts[i].String()
	}
	return s
}

// gateValues are the gates of sigmoidGateCases with their extremes.
func gateValues(e *env, n int) []float32 {
	gv := e.uniform(n, 8)
	copy(gv, []float32{-1000, -90, -30, -1.2785, -1e-3, 0, 1e-3, 30, 90, 1000})
	return gv
}

// sigmoidGateBF16Cases run SigmoidGate with every combination of F32 and
// BF16 operands but the all-F32 one (sigmoidGateCases): BF16 inputs are
// bf16 values read widened, a BF16 out each product rounded once
// (Qwen3.5's output gate over bf16 activations). One case aliases a BF16
// out with a BF16 x.
func sigmoidGateBF16Cases() []Case {
	var cs []Case
	names := []string{"out", "x", "gate"}
	for mask := 1; mask < 8; mask++ {
		dts, seed := dtypesOf(mask, 3), uint64(880+mask)
		for _, alias := range []bool{false, true} {
			if alias && mask&3 != 3 {
				continue
			}
			name := fmt.Sprintf("n=1000,%s", dtypeNames(names, dts))
			if alias {
				name += ",alias=out=x"
			}
			cs = append(cs, Case{Op: "SigmoidGate", Name: name, check: func(b kernels.Backend) error {
				const n = 1000
				e := newEnv(b, seed)
				defer e.free()
				x := e.floats("x", dts[1], e.uniform(n, 2), !alias)
				gate := e.floats("gate", dts[2], gateValues(e, n), true)
				out := x
				if !alias {
					out = e.floats("out", dts[0], nans(n), false)
				}
				want := RefSigmoidGate(x.values(), gate.values())
				b.SigmoidGate(out.view, x.view, gate.view, n)
				if err := e.checkAll(); err != nil {
					return err
				}
				return CompareStored("out", dts[0], out.result(b), want, tolElementwise)
			}})
		}
	}
	return cs
}

// sigmoidGateBackwardBF16Cases are sigmoidGateBF16Cases for
// SigmoidGateBackward: every combination of F32 and BF16 dx, dgate, dy, x
// and gate but the all-F32 one, and dx aliasing dy where both are BF16.
func sigmoidGateBackwardBF16Cases() []Case {
	var cs []Case
	names := []string{"dx", "dgate", "dy", "x", "gate"}
	for mask := 1; mask < 32; mask++ {
		dts, seed := dtypesOf(mask, 5), uint64(2480+mask)
		for _, alias := range []bool{false, true} {
			if alias && mask&5 != 5 {
				continue
			}
			name := fmt.Sprintf("n=1000,%s", dtypeNames(names, dts))
			if alias {
				name += ",alias=dx=dy"
			}
			cs = append(cs, trainCase("SigmoidGateBackward", name, func(b kernels.Backend, tb kernels.TrainOps) error {
				const n = 1000
				e := newEnv(b, seed)
				defer e.free()
				dy := e.floats("dy", dts[2], e.uniform(n, 1), !alias)
				x := e.floats("x", dts[3], e.uniform(n, 2), true)
				gate := e.floats("gate", dts[4], gateValues(e, n), true)
				dx, dgate := dy, e.floats("dgate", dts[1], nans(n), false)
				if !alias {
					dx = e.floats("dx", dts[0], nans(n), false)
				}
				wantX, wantG := RefSigmoidGateBackward(dy.values(), x.values(), gate.values())
				tb.SigmoidGateBackward(dx.view, dgate.view, dy.view, x.view, gate.view, n)
				if err := e.checkAll(); err != nil {
					return err
				}
				if err := CompareStored("dx", dts[0], dx.result(b), wantX, tolElementwise); err != nil {
					return err
				}
				return CompareStored("dgate", dts[1], dgate.result(b), wantG, tolElementwise)
			}))
		}
	}
	return cs
}
