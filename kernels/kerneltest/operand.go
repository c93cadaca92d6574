package kerneltest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/grpo-dev/grpo/kernels"
)

// guard is the number of elements allocated on each side of every operand.
// Ops run on Slice views of the middle, so a backend that reads or writes
// outside the range an op names is caught: float guards are NaN (an
// out-of-range read poisons the result), index guards are MinInt32 (an
// out-of-range read indexes far outside any table), and any write to a
// guard is reported. It is odd so views start misaligned.
const guard = 3

// operand is one guarded buffer of a test case: a parent allocation of
// n+2·guard elements and the view of its middle n that the op sees.
type operand struct {
	name   string
	dt     kernels.DType
	n      int
	input  bool // inputs must come back bit-identical
	parent kernels.Buffer
	view   kernels.Buffer
	f      []float32 // parent's contents after upload (bf16-rounded for BF16)
	i      []int32
	// guardOff is the guard on each side when it is not guard (0): an
	// operand whose view must be aligned (env.words).
	guardOff int
}

// g is the operand's guard on each side.
func (o *operand) g() int {
	if o.guardOff != 0 {
		return o.guardOff
	}
	return guard
}

// env allocates the operands of one case and frees them afterwards.
type env struct {
	b   kernels.Backend
	rng *rand.Rand
	ops []*operand
}

func newEnv(b kernels.Backend, seed uint64) *env {
	return &env{b: b, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
}

func (e *env) free() {
	for _, o := range e.ops {
		e.b.Free(o.parent)
	}
}

// floats allocates a guarded F32 or BF16 operand holding vals.
func (e *env) floats(name string, dt kernels.DType, vals []float32, input bool) *operand {
	return e.floatsGuard(name, dt, vals, input, guard)
}

// alignedGuard is the guard of operands whose view must start 16-byte
// aligned even as BF16 (the cp.async loads of kernels/cuda's tensor-core
// attention): 8 elements.
const alignedGuard = 8

// floatsAligned is floats with alignedGuard elements on each side.
func (e *env) floatsAligned(name string, dt kernels.DType, vals []float32, input bool) *operand {
	o := e.floatsGuard(name, dt, vals, input, alignedGuard)
	o.guardOff = alignedGuard
	return o
}

func (e *env) floatsGuard(name string, dt kernels.DType, vals []float32, input bool, guard int) *operand {
	n := len(vals)
	o := &operand{name: name, dt: dt, n: n, input: input}
	o.f = make([]float32, n+2*guard)
	nan := float32(math.NaN())
	for j := range o.f {
		o.f[j] = nan
	}
	copy(o.f[guard:], vals)
	if dt == kernels.BF16 {
		for j, v := range o.f {
			o.f[j] = RoundBF16(v)
		}
	}
	o.parent = e.b.Alloc(dt, n+2*guard)
	e.b.Upload(o.parent, o.f)
	o.view = o.parent.Slice(guard, n)
	e.ops = append(e.ops, o)
	return o
}

// in is an F32 input operand; out an F32 output operand whose initial
// contents are vals (often NaN, to prove the op overwrites them).
func (e *env) in(name string, vals []float32) *operand {
	return e.floats(name, kernels.F32, vals, true)
}
func (e *env) out(name string, vals []float32) *operand {
	return e.floats(name, kernels.F32, vals, false)
}

// ints allocates a guarded I32 input operand.
func (e *env) ints(name string, vals []int32) *operand {
	n := len(vals)
	o := &operand{name: name, dt: kernels.I32, n: n, input: true}
	o.i = make([]int32, n+2*guard)
	for j := range o.i {
		o.i[j] = math.MinInt32
	}
	copy(o.i[guard:], vals)
	o.parent = e.b.Alloc(kernels.I32, n+2*guard)
	e.b.UploadI32(o.parent, o.i)
	o.view = o.parent.Slice(guard, n)
	e.ops = append(e.ops, o)
	return o
}

// values returns the view's initial contents as float64 (as stored, so
// BF16 operands give their rounded values): the reference's inputs.
func (o *operand) values() []float64 {
	v := make([]float64, o.n)
	for j := range v {
		v[j] = float64(o.f[o.g()+j])
	}
	return v
}

// result downloads the operand's view after the op.
func (o *operand) result(b kernels.Backend) []float32 {
	got := make([]float32, o.n)
	b.Download(got, o.view)
	return got
}

// intact checks that the guards, and for inputs the whole view, still hold
// what was uploaded.
func (o *operand) intact(b kernels.Backend) error {
	gd := o.g()
	total := o.n + 2*gd
	inGuard := func(j int) bool { return j < gd || j >= gd+o.n }
	if o.dt == kernels.I32 {
		got := make([]int32, total)
		b.DownloadI32(got, o.parent)
		for j, v := range got {
			if (inGuard(j) || o.input) && v != o.i[j] {
				return fmt.Errorf("%s: element %d changed from %d to %d (%s)", o.name, j-gd, o.i[j], v, o.where(j))
			}
		}
		return nil
	}
	got := make([]float32, total)
	b.Download(got, o.parent)
	for j, v := range got {
		if (inGuard(j) || o.input) && !sameFloat(v, o.f[j]) {
			return fmt.Errorf("%s: element %d changed from %v to %v (%s)", o.name, j-gd, o.f[j], v, o.where(j))
		}
	}
	return nil
}

func (o *operand) where(j int) string {
	if j < o.g() || j >= o.g()+o.n {
		return "guard outside the op's range was written"
	}
	return "input operand was written"
}

// checkAll runs Sync and then intact on every operand.
func (e *env) checkAll() error {
	if err := e.b.Sync(); err != nil {
		return fmt.Errorf("Sync: %w", err)
	}
	for _, o := range e.ops {
		if err := o.intact(e.b); err != nil {
			return err
		}
	}
	return nil
}

// uniform returns n values uniform in [-scale, scale).
func (e *env) uniform(n int, scale float64) []float32 {
	v := make([]float32, n)
	for j := range v {
		v[j] = float32((2*e.rng.Float64() - 1) * scale)
	}
	return v
}

// nans returns n NaNs: the initial contents of outputs an op must overwrite.
func nans(n int) []float32 {
	v := make([]float32, n)
	for j := range v {
		v[j] = float32(math.NaN())
	}
	return v
}

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for j, x := range v {
		out[j] = float32(x)
	}
	return out
}
