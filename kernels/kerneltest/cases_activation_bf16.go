package kerneltest

import "github.com/grpo-dev/grpo/kernels"

// The expert activations over bf16 activations (a bf16 MoE or MLP's
// tensors between ops): SwiGLU, SwiGLUBackward, ClampedSwiGLU(Backward),
// ReLU2(Backward) with every mix of F32 and BF16 operands but the all-F32
// one (their own cases), n = 1000 (not a multiple of a block), each
// output also aliasing its input where the op allows it and the pair
// shares a dtype. BF16 inputs are bf16 values read widened; an output is
// held by CompareStored at tolElementwise (a BF16 one: every stored value
// a bf16 value and the bf16 rounding of a value within tolElementwise of
// the float64 reference).

// activationOp is one elementwise op under test: its operands (outputs
// first), their input values, its float64 reference and its call.
type activationOp struct {
	op     string
	names  []string
	outs   int
	alias  [][2]int // (output, input) operand pairs the op lets alias
	seed   uint64
	inputs func(e *env, n int) [][]float32
	ref    func(in [][]float64) [][]float64
	call   func(b kernels.Backend, x []kernels.Buffer, n int)
}

// cases are a's dtype mixes, each without and (where every aliased pair
// shares a dtype) with its outputs aliasing their inputs.
func (a activationOp) cases() []Case {
	var cs []Case
	for mask := 1; mask < 1<<len(a.names); mask++ {
		dts := dtypesOf(mask, len(a.names))
		for _, alias := range []bool{false, true} {
			if alias && (a.alias == nil || !pairsShareDType(a.alias, dts)) {
				continue
			}
			name := "n=1000," + dtypeNames(a.names, dts)
			if alias {
				name += ",alias"
			}
			dts, alias, seed := dts, alias, a.seed+uint64(mask)
			cs = append(cs, Case{Op: a.op, Name: name, check: func(b kernels.Backend) error {
				return a.check(b, dts, alias, seed)
			}})
		}
	}
	return cs
}

func pairsShareDType(pairs [][2]int, dts []kernels.DType) bool {
	for _, p := range pairs {
		if dts[p[0]] != dts[p[1]] {
			return false
		}
	}
	return true
}

func (a activationOp) check(b kernels.Backend, dts []kernels.DType, alias bool, seed uint64) error {
	const n = 1000
	e := newEnv(b, seed)
	defer e.free()
	ops := make([]*operand, len(a.names))
	aliased := map[int]int{} // input → output
	if alias {
		for _, p := range a.alias {
			aliased[p[1]] = p[0]
		}
	}
	for i, v := range a.inputs(e, n) {
		in := a.outs + i
		_, written := aliased[in]
		ops[in] = e.floats(a.names[in], dts[in], v, !written)
	}
	for i := range a.outs {
		ops[i] = nil
		for in, out := range aliased {
			if out == i {
				ops[i] = ops[in]
			}
		}
		if ops[i] == nil {
			ops[i] = e.floats(a.names[i], dts[i], nans(n), false)
		}
	}
	in := make([][]float64, len(a.names)-a.outs)
	for i := range in {
		in[i] = ops[a.outs+i].values()
	}
	want := a.ref(in)
	views := make([]kernels.Buffer, len(ops))
	for i, o := range ops {
		views[i] = o.view
	}
	a.call(b, views, n)
	if err := e.checkAll(); err != nil {
		return err
	}
	for i := range a.outs {
		if err := CompareStored(a.names[i], dts[i], ops[i].result(b), want[i], tolElementwise); err != nil {
			return err
		}
	}
	return nil
}

// reluValues are ReLU2's inputs with its extremes and its kink in front.
func reluValues(e *env, n int) []float32 {
	v := e.uniform(n, 3)
	copy(v, []float32{-1000, -1, -1e-3, 0, 1e-3, 1, 1000})
	return v
}

var activationBF16Ops = []activationOp{
	{op: "SwiGLU", names: []string{"out", "gate", "up"}, outs: 1, alias: [][2]int{{0, 1}}, seed: 9100,
		inputs: func(e *env, n int) [][]float32 { return [][]float32{gateValues(e, n), e.uniform(n, 2)} },
		ref:    func(in [][]float64) [][]float64 { return [][]float64{RefSwiGLU(in[0], in[1])} },
		call:   func(b kernels.Backend, x []kernels.Buffer, n int) { b.SwiGLU(x[0], x[1], x[2], n) }},
	{op: "SwiGLUBackward", names: []string{"dgate", "dup", "dy", "gate", "up"}, outs: 2, alias: [][2]int{{0, 3}, {1, 4}}, seed: 9140,
		inputs: func(e *env, n int) [][]float32 {
			return [][]float32{e.uniform(n, 1), gateValues(e, n), e.uniform(n, 2)}
		},
		ref: func(in [][]float64) [][]float64 {
			g, u := RefSwiGLUBackward(in[0], in[1], in[2])
			return [][]float64{g, u}
		},
		call: func(b kernels.Backend, x []kernels.Buffer, n int) {
			b.(kernels.TrainOps).SwiGLUBackward(x[0], x[1], x[2], x[3], x[4], n)
		}},
	{op: "ClampedSwiGLU", names: []string{"out", "gate", "up"}, outs: 1, alias: [][2]int{{0, 1}}, seed: 9180,
		inputs: func(e *env, n int) [][]float32 {
			g, u := e.gluInputs(n, clampedGLUs[0])
			return [][]float32{g, u}
		},
		ref: func(in [][]float64) [][]float64 {
			c := clampedGLUs[0]
			return [][]float64{RefClampedSwiGLU(in[0], in[1], float64(c.Alpha), float64(c.Limit))}
		},
		call: func(b kernels.Backend, x []kernels.Buffer, n int) {
			b.ClampedSwiGLU(x[0], x[1], x[2], n, clampedGLUs[0])
		}},
	{op: "ClampedSwiGLUBackward", names: []string{"dgate", "dup", "dy", "gate", "up"}, outs: 2, alias: [][2]int{{0, 3}, {1, 4}}, seed: 9220,
		inputs: func(e *env, n int) [][]float32 {
			g, u := e.gluInputs(n, clampedGLUs[1])
			return [][]float32{e.uniform(n, 1), g, u}
		},
		ref: func(in [][]float64) [][]float64 {
			c := clampedGLUs[1]
			g, u := RefClampedSwiGLUBackward(in[0], in[1], in[2], float64(c.Alpha), float64(c.Limit))
			return [][]float64{g, u}
		},
		call: func(b kernels.Backend, x []kernels.Buffer, n int) {
			b.ClampedSwiGLUBackward(x[0], x[1], x[2], x[3], x[4], n, clampedGLUs[1])
		}},
	{op: "ReLU2", names: []string{"out", "x"}, outs: 1, alias: [][2]int{{0, 1}}, seed: 9260,
		inputs: func(e *env, n int) [][]float32 { return [][]float32{reluValues(e, n)} },
		ref:    func(in [][]float64) [][]float64 { return [][]float64{RefReLU2(in[0])} },
		call:   func(b kernels.Backend, x []kernels.Buffer, n int) { b.ReLU2(x[0], x[1], n) }},
	{op: "ReLU2Backward", names: []string{"dx", "dy", "x"}, outs: 1, alias: [][2]int{{0, 1}}, seed: 9270,
		inputs: func(e *env, n int) [][]float32 { return [][]float32{e.uniform(n, 1), reluValues(e, n)} },
		ref:    func(in [][]float64) [][]float64 { return [][]float64{RefReLU2Backward(in[0], in[1])} },
		call:   func(b kernels.Backend, x []kernels.Buffer, n int) { b.ReLU2Backward(x[0], x[1], x[2], n) }},
}

// activationBF16Cases are op's cases of activationBF16Ops, which its
// suite runs after its F32 cases.
func activationBF16Cases(op string) []Case {
	var cs []Case
	for _, a := range activationBF16Ops {
		if a.op == op {
			cs = append(cs, a.cases()...)
		}
	}
	return cs
}
