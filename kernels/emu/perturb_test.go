package emu

import (
	"math"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cuda"
)

// TestMathPerturbation checks the mode itself: with SetMathULPs(2) every
// finite non-zero expf/logf/rsqrtf a kernel computes is exactly 2 ulp from
// libm's, in both directions across the inputs.
func TestMathPerturbation(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	const n = 256
	in := make([]float32, n)
	for i := range in {
		in[i] = 0.37 + float32(i)*0.731
	}
	run := func(ulps int) []float32 {
		defer SetMathULPs(SetMathULPs(ulps))
		x := upload(t, d, in)
		out, _ := d.Alloc(4 * 3 * n)
		if err := d.Launch("demo/demo_math", cuda.D1(1), cuda.D1(n), 0, out, x, int32(n)); err != nil {
			t.Fatal(err)
		}
		return download[float32](t, d, out, 3*n)
	}
	exact, moved := run(0), run(GPUMathULPs)
	up, down := 0, 0
	for i := range exact {
		if exact[i] == 0 || math.IsInf(float64(exact[i]), 0) {
			continue
		}
		diff := int64(math.Float32bits(moved[i])) - int64(math.Float32bits(exact[i]))
		switch {
		case diff == GPUMathULPs || diff == -GPUMathULPs:
			if (diff > 0) == (exact[i] > 0) {
				up++
			} else {
				down++
			}
		default:
			t.Fatalf("result %d (%s of %g): %g against libm's %g, %d ulp apart, want %d", i, [3]string{"expf", "logf", "rsqrtf"}[i%3], in[i/3], moved[i], exact[i], diff, GPUMathULPs)
		}
	}
	if up < n/2 || down < n/2 {
		t.Errorf("perturbed %d results up and %d down; want both directions", up, down)
	}
}
