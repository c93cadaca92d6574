package cpu_test

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// Mistakes a kernel over bf16 activations makes: storing its f32 sum
// into a bf16 output unrounded (cpu storage is f32, so nothing else
// would round it), and computing in bf16 (an f32 operand rounded before
// the sum). The suite's bf16 Add and AddBias cases must catch each.

// storesBF16Unrounded adds in f32 and stores the sum as it is whatever
// out's dtype.
type storesBF16Unrounded struct{ *cpu.Backend }

func (m storesBF16Unrounded) Add(out, a, b kernels.Buffer, n int) {
	os, as, bs := cpu.Float32s(out)[:n], cpu.Float32s(a)[:n], cpu.Float32s(b)[:n]
	for i := range os {
		os[i] = as[i] + bs[i]
	}
}

func (m storesBF16Unrounded) AddBias(x, bias kernels.Buffer, rows, cols int) {
	xs, bs := cpu.Float32s(x)[:rows*cols], cpu.Float32s(bias)[:cols]
	for i := range xs {
		xs[i] += bs[i%cols]
	}
}

// sumsInBF16 rounds a to bf16 before the sum when any operand is BF16.
type sumsInBF16 struct{ *cpu.Backend }

func (m sumsInBF16) Add(out, a, b kernels.Buffer, n int) {
	if out.DType() == kernels.F32 && a.DType() == kernels.F32 && b.DType() == kernels.F32 {
		m.Backend.Add(out, a, b, n)
		return
	}
	ra := m.Alloc(kernels.BF16, n)
	defer m.Free(ra)
	m.Upload(ra, cpu.Float32s(a)[:n]) // rounds to nearest even
	m.Backend.Add(out, ra, b, n)
}

func TestSuiteCatchesBF16ActivationMistakes(t *testing.T) {
	base := cpu.New()
	for _, op := range []string{"Add", "AddBias"} {
		if err := kerneltest.Check(base, op); err != nil {
			t.Fatalf("unbroken backend fails %s: %v", op, err)
		}
	}
	for _, m := range []struct {
		op, why string
		b       kernels.Backend
	}{
		{"Add", "stores a bf16 sum unrounded", storesBF16Unrounded{base}},
		{"AddBias", "stores a bf16 x unrounded", storesBF16Unrounded{base}},
		{"Add", "rounds an f32 operand to bf16", sumsInBF16{base}},
	} {
		err := kerneltest.Check(m.b, m.op)
		if err == nil {
			t.Errorf("%s that %s passes the suite", m.op, m.why)
			continue
		}
		first, _, _ := strings.Cut(err.Error(), "\n")
		t.Logf("%s that %s: %d failing cases, first: %s", m.op, m.why, strings.Count(err.Error(), "\n")+1, first)
	}
}
