package emu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// Tests of mma.h through demo_mma.cuh: mma.sync m16n8k16 with the PTX
// ISA's fragment layout, and cp.async's deferred completion.

// TestMMAMatchesPlainLoops: lanes that gather their registers by the PTX
// ISA's m16n8k16 layout get d = a·b + c equal, bit for bit, to a plain
// loop summing the exact bf16 products in f32 in k order (mma.h's
// documented order), and within f32 rounding of float64. A layout slip
// (a register's rows, a half's column) moves elements and fails both.
func TestMMAMatchesPlainLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 4 {
		a, b, c := make([]uint16, 16*16), make([]uint16, 16*8), make([]float32, 16*8)
		for i := range a {
			a[i] = kerneltest.F32ToBF16(float32(rng.NormFloat64()))
		}
		for i := range b {
			b[i] = kerneltest.F32ToBF16(float32(rng.NormFloat64()))
		}
		for i := range c {
			c[i] = float32(rng.NormFloat64())
		}
		d := NewDevice()
		out, _ := d.Alloc(4 * 16 * 8)
		if err := d.Launch("demo/demo_mma_16x8x16", cuda.D1(1), cuda.D1(32), 0, out, upload(t, d, a), upload(t, d, b), upload(t, d, c)); err != nil {
			t.Fatal(err)
		}
		got := download[float32](t, d, out, 16*8)
		d.Close()
		for r := range 16 {
			for col := range 8 {
				s := c[r*8+col]
				s64, abs := float64(s), math.Abs(float64(s))
				for k := range 16 {
					x, y := kerneltest.BF16ToF32(a[r*16+k]), kerneltest.BF16ToF32(b[k*8+col])
					s += x * y
					s64 += float64(x) * float64(y)
					abs += math.Abs(float64(x) * float64(y))
				}
				if v := got[r*8+col]; v != s || math.Abs(float64(v)-s64) > 17*0x1p-24*abs {
					t.Fatalf("trial %d: d[%d][%d] = %g, plain loop %g, float64 %g", trial, r, col, v, s, s64)
				}
			}
		}
	}
}

// TestCpAsyncCompletesAtWait: a cp.async destination keeps its old
// contents (NaN: dynamic shared memory's fill) until a wait_group
// completes the copy's group; wait_group 1 completes the older group
// only; a copy with valid false writes zeros.
func TestCpAsyncCompletesAtWait(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	src0, src1 := make([]float32, 128), make([]float32, 128)
	for i := range src0 {
		src0[i], src1[i] = float32(i+1), float32(-i-1)
	}
	out, _ := d.Alloc(4 * 640)
	if err := d.Launch("demo/demo_cp_async", cuda.D1(1), cuda.D1(32), 3*512, out, upload(t, d, src0), upload(t, d, src1)); err != nil {
		t.Fatal(err)
	}
	got := download[float32](t, d, out, 640)
	for i := range 128 {
		for _, x := range []struct {
			what      string
			got, want float32
		}{
			{"region 0 before any wait", got[i], float32(math.NaN())},
			{"region 0 after wait_group 1", got[128+i], src0[i]},
			{"region 1 after wait_group 1", got[256+i], float32(math.NaN())},
			{"region 1 after wait_group 0", got[384+i], src1[i]},
			{"region 2 (zero fill) after wait_group 0", got[512+i], 0},
		} {
			if x.got != x.want && !(math.IsNaN(float64(x.got)) && math.IsNaN(float64(x.want))) {
				t.Fatalf("%s: element %d = %g, want %g", x.what, i, x.got, x.want)
			}
		}
	}
}
