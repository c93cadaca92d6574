package cpu_test

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

func TestBLASSelection(t *testing.T) {
	t.Setenv("GRPO_BLAS", "gonum")
	if got := cpu.New().BLASName(); got != "gonum" {
		t.Errorf("GRPO_BLAS=gonum: BLASName = %q, want gonum", got)
	}
	if got := cpu.New().Name(); got != "cpu" {
		t.Errorf("Name = %q, want cpu", got)
	}
	t.Setenv("GRPO_BLAS", "")
	want := "openblas"
	if cpu.OpenBLASError() != nil {
		want = "gonum"
	}
	if got := cpu.New().BLASName(); got != want {
		t.Errorf("auto with OpenBLASError() = %v: BLASName = %q, want %q", cpu.OpenBLASError(), got, want)
	}
	if got := cpu.New(cpu.WithBLAS(cpu.BLASGonum)).BLASName(); got != "gonum" {
		t.Errorf("WithBLAS(gonum): BLASName = %q", got)
	}
}

func TestParseBLAS(t *testing.T) {
	for in, want := range map[string]cpu.BLAS{"": cpu.BLASAuto, "auto": cpu.BLASAuto, " OpenBLAS ": cpu.BLASOpenBLAS, "gonum": cpu.BLASGonum} {
		if got, err := cpu.ParseBLAS(in); err != nil || got != want {
			t.Errorf("ParseBLAS(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := cpu.ParseBLAS("mkl")
	if err == nil || !strings.Contains(err.Error(), `"mkl"`) || !strings.Contains(err.Error(), "auto, openblas, gonum") {
		t.Errorf("ParseBLAS(mkl) error = %v, want it to name the value and the choices", err)
	}
}

// Shape mistakes are programming errors: they panic naming the op and the
// operand, and never write anything.
func TestShapeMismatchPanicsNamingOp(t *testing.T) {
	b := cpu.New()
	small, a := b.Alloc(kernels.F32, 5), b.Alloc(kernels.F32, 6)
	idx := b.Alloc(kernels.I32, 2)
	b.UploadI32(idx, []int32{0, 7})
	cases := []struct {
		want string
		op   func()
	}{
		{"cpu.MatMul: c has 5 elements, shape needs 6", func() { b.MatMul(small, a, a, 2, 3, 2, false, false, 1, 0) }},
		{"cpu.GatherRows: idx[1] = 7, outside [0, 3)", func() { b.GatherRows(a, a, idx, 2, 2) }},
		{"cpu.Add: out is i32, want f32", func() { b.Add(idx, a, a, 2) }},
		{"cpu.Upload: buffer has 5 elements, host slice 6", func() { b.Upload(small, make([]float32, 6)) }},
		{"cpu: Free of a view", func() { b.Free(a.Slice(1, 2)) }},
		{"cpu: Slice(4, 3)", func() { a.Slice(4, 3) }},
	}
	for _, c := range cases {
		func() {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, c.want) {
					t.Errorf("panic %v, want one containing %q", r, c.want)
				}
			}()
			c.op()
		}()
	}
}

// Float32s and Int32s expose the storage, views included.
func TestHostAccessors(t *testing.T) {
	b := cpu.New()
	f := b.Alloc(kernels.BF16, 4)
	b.Upload(f, []float32{1, 2, 3.14159265, 4})
	if got := cpu.Float32s(f.Slice(2, 1)); len(got) != 1 || got[0] != 3.140625 {
		t.Errorf("Float32s of bf16 view = %v, want [3.140625]", got)
	}
	i := b.Alloc(kernels.I32, 3)
	cpu.Int32s(i.Slice(1, 2))[0] = 9
	got := make([]int32, 3)
	b.DownloadI32(got, i)
	if got[1] != 9 {
		t.Errorf("write through Int32s of a view: parent = %v, want [0 9 0]", got)
	}
}
