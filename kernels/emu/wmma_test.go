package emu

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// Tests of the wmma emulation (wmma.h) through demo_wmma.cuh, against
// plain loops.

// wmmaGEMM is one demo_wmma kernel: its tile shape and operand layouts.
type wmmaGEMM struct {
	kernel     string
	m, n, k    int // tile
	aRow, bRow bool
}

// at is the offset of logical element (r, c) of a rows × cols matrix
// stored row- or column-major.
func at(r, c, rows, cols int, rowMajor bool) int {
	if rowMajor {
		return r*cols + c
	}
	return c*rows + r
}

// TestWMMAMatchesPlainLoops runs c = a·b + c over several tiles per
// dimension for every shape and layout, and requires the result to equal,
// bit for bit, a plain loop that sums the exact bf16×bf16 products in f32
// in k order (the order wmma.h documents), and to lie within the f32
// rounding bound of a float64 reference.
func TestWMMAMatchesPlainLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, g := range []wmmaGEMM{
		{"demo_wmma_16x16x16_rr", 16, 16, 16, true, true},
		{"demo_wmma_16x16x16_rc", 16, 16, 16, true, false},
		{"demo_wmma_16x16x16_cr", 16, 16, 16, false, true},
		{"demo_wmma_16x16x16_cc", 16, 16, 16, false, false},
		{"demo_wmma_32x8x16_rc", 32, 8, 16, true, false},
		{"demo_wmma_8x32x16_rr", 8, 32, 16, true, true},
	} {
		for _, cRow := range []bool{true, false} {
			m, n, k := 2*g.m, 3*g.n, 4*g.k
			a := make([]uint16, m*k)
			b := make([]uint16, k*n)
			c := make([]float32, m*n)
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
			pa, pb, pc := upload(t, d, a), upload(t, d, b), upload(t, d, c)
			tiles := (m / g.m) * (n / g.n)
			cr := int32(0)
			if cRow {
				cr = 1
			}
			if err := d.Launch("demo/"+g.kernel, cuda.D1((tiles+1)/2), cuda.D1(64), 0, pc, pa, pb, int32(m), int32(n), int32(k), cr); err != nil {
				t.Fatal(err)
			}
			got := download[float32](t, d, pc, m*n)
			d.Close()
			bad := 0
			for r := range m {
				for col := range n {
					s := c[at(r, col, m, n, cRow)]
					s64, abs := float64(s), math.Abs(float64(s))
					for p := range k {
						x := kerneltest.BF16ToF32(a[at(r, p, m, k, g.aRow)])
						y := kerneltest.BF16ToF32(b[at(p, col, k, n, g.bRow)])
						s += x * y // exact product: fused or not, one rounding
						s64 += float64(x) * float64(y)
						abs += math.Abs(float64(x) * float64(y))
					}
					v := got[at(r, col, m, n, cRow)]
					if v != s || math.Abs(float64(v)-s64) > float64(k+1)*0x1p-24*abs {
						if bad++; bad <= 3 {
							t.Errorf("%s, c row-major %v: c[%d][%d] = %g, plain loop %g, float64 %g", g.kernel, cRow, r, col, v, s, s64)
						}
					}
				}
			}
		}
	}
}

// TestWMMALayoutIsDocumented pins the fragment layout wmma.h documents:
// element i of lane l is row-major element l·num_elements + i.
func TestWMMALayoutIsDocumented(t *testing.T) {
	acc := make([]float32, 256)
	a := make([]uint16, 256)
	for i := range acc {
		acc[i] = float32(i)
		a[i] = kerneltest.F32ToBF16(float32(i)) // integers < 256 are exact in bf16
	}
	d := NewDevice()
	defer d.Close()
	oc, _ := d.Alloc(4 * 256)
	oa, _ := d.Alloc(4 * 256)
	if err := d.Launch("demo/demo_wmma_layout", cuda.D1(1), cuda.D1(32), 0, oc, oa, upload(t, d, acc), upload(t, d, a)); err != nil {
		t.Fatal(err)
	}
	gc, ga := download[float32](t, d, oc, 256), download[float32](t, d, oa, 256)
	for e := range 256 {
		if gc[e] != float32(e) || ga[e] != float32(e) {
			t.Fatalf("lane %d element %d holds accumulator %g, matrix_a %g; wmma.h documents %d", e/8, e%8, gc[e], ga[e], e)
		}
	}
}

// TestWMMAMisuseIsReported: a warp-collective call made by half a warp
// (the other half at the next call), a misaligned pointer or ldm trap — on a GPU these are
// undefined behaviour that may go unnoticed.
func TestWMMAMisuseIsReported(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	c, _ := d.Alloc(4 * 256)
	a := upload(t, d, make([]uint16, 512))
	if err := d.Launch("demo/demo_wmma_divergent", cuda.D1(1), cuda.D1(32), 0, c, a); err == nil || !strings.Contains(err.Error(), "not all at the same wmma call") {
		t.Errorf("mma_sync by half a warp: error %v, want a report of lanes at different wmma calls", err)
	}
	for _, x := range []struct {
		off, ldm int32
		want     string
	}{{1, 16, "not 32-byte aligned"}, {0, 12, "ldm is not a multiple of 16 bytes"}} {
		err := d.Launch("demo/demo_wmma_misaligned", cuda.D1(1), cuda.D1(32), 0, c, a, x.off, x.ldm)
		if err == nil || !strings.Contains(err.Error(), x.want) {
			t.Errorf("load at offset %d, ldm %d: error %v, want %q", x.off, x.ldm, err, x.want)
		}
	}
	if err := d.Launch("demo/demo_wmma_misaligned", cuda.D1(1), cuda.D1(32), 0, c, a, int32(16), int32(24)); err != nil {
		t.Errorf("an aligned load (offset 16 elements, ldm 24) failed: %v", err)
	}
}
