package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// bufferCases check the memory contract the ops rely on: zeroed Alloc,
// exact F32 and I32 round trips, BF16 rounding to nearest-even, raw BF16
// upload, views that alias their parent, and Copy.
func bufferCases() []Case {
	c := func(name string, f func(b kernels.Backend) error) Case {
		return Case{Op: "Buffers", Name: name, check: f}
	}
	return []Case{
		c("AllocZeroed", checkAllocZeroed),
		c("F32RoundTrip", checkF32RoundTrip),
		c("BF16RoundNearestEven", checkBF16Rounding),
		c("UploadBF16Bits", checkUploadBF16Bits),
		c("I32RoundTrip", checkI32RoundTrip),
		c("SliceAliasesParent", checkSliceAliases),
		c("Copy", checkCopy),
	}
}

func checkAllocZeroed(b kernels.Backend) error {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16, kernels.I32} {
		buf := b.Alloc(dt, 37)
		if buf.Len() != 37 || buf.DType() != dt {
			return fmt.Errorf("Alloc(%v, 37) has Len %d DType %v", dt, buf.Len(), buf.DType())
		}
		if dt == kernels.I32 {
			got := make([]int32, 37)
			b.DownloadI32(got, buf)
			for i, v := range got {
				if v != 0 {
					return fmt.Errorf("Alloc(%v)[%d] = %d, want 0", dt, i, v)
				}
			}
		} else {
			got := nans(37)
			b.Download(got, buf)
			for i, v := range got {
				if math.Float32bits(v) != 0 {
					return fmt.Errorf("Alloc(%v)[%d] = %v, want +0", dt, i, v)
				}
			}
		}
		b.Free(buf)
	}
	return nil
}

func checkF32RoundTrip(b kernels.Backend) error {
	src := []float32{0, float32(math.Copysign(0, -1)), 1, -1.5, math.MaxFloat32, math.SmallestNonzeroFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), 3.14159265, 1e-30, -7e20}
	buf := b.Alloc(kernels.F32, len(src))
	defer b.Free(buf)
	b.Upload(buf, src)
	got := make([]float32, len(src))
	b.Download(got, buf)
	for i := range src {
		if math.Float32bits(got[i]) != math.Float32bits(src[i]) {
			return fmt.Errorf("F32 round trip [%d]: uploaded %v, downloaded %v", i, src[i], got[i])
		}
	}
	return nil
}

func checkBF16Rounding(b kernels.Backend) error {
	// Each pair is (value, what a BF16 buffer must hold): bf16 keeps 8
	// significant bits, so 1+2⁻⁸ is a tie between 1 and 1+2⁻⁷.
	one := float32(1)
	ulp := float32(1.0 / 128) // bf16 ulp at 1
	cases := [][2]float32{
		{one, one},
		{one + ulp/2, one},                // tie, rounds to even (1)
		{one + 3*ulp/2, one + 2*ulp},      // tie, rounds to even (1+2ulp)
		{one + ulp/2 + ulp/64, one + ulp}, // above the tie
		{one + ulp/2 - ulp/64, one},       // below the tie
		{-(one + ulp/2 + ulp/64), -(one + ulp)},
		{3.14159265, 3.140625},
		{float32(math.Inf(1)), float32(math.Inf(1))},
		{math.MaxFloat32, float32(math.Inf(1))}, // rounds past the largest bf16
		{1e-40, BF16ToF32(F32ToBF16(1e-40))},    // subnormal kept, not flushed
	}
	src := make([]float32, len(cases)+1)
	for i, c := range cases {
		src[i] = c[0]
	}
	src[len(cases)] = float32(math.NaN())
	buf := b.Alloc(kernels.BF16, len(src))
	defer b.Free(buf)
	b.Upload(buf, src)
	got := make([]float32, len(src))
	b.Download(got, buf)
	for i, c := range cases {
		if math.Float32bits(got[i]) != math.Float32bits(c[1]) {
			return fmt.Errorf("BF16 Upload(%v) downloads as %v, want %v (round to nearest, ties to even)", c[0], got[i], c[1])
		}
	}
	if v := got[len(cases)]; v == v {
		return fmt.Errorf("BF16 Upload(NaN) downloads as %v, want NaN", v)
	}
	return nil
}

func checkUploadBF16Bits(b kernels.Backend) error {
	bits := []uint16{0x3f80, 0xbf80, 0x4049, 0x0001, 0x7f80, 0xc2f7, 0x0000, 0x8000}
	for _, dt := range []kernels.DType{kernels.BF16, kernels.F32} {
		buf := b.Alloc(dt, len(bits))
		b.UploadBF16(buf, bits)
		got := make([]float32, len(bits))
		b.Download(got, buf)
		b.Free(buf)
		for i, h := range bits {
			if math.Float32bits(got[i]) != uint32(h)<<16 {
				return fmt.Errorf("UploadBF16(%#04x) into %v downloads as %v, want %v", h, dt, got[i], BF16ToF32(h))
			}
		}
	}
	return nil
}

func checkI32RoundTrip(b kernels.Backend) error {
	src := []int32{0, 1, -1, math.MaxInt32, math.MinInt32, 151935, 7}
	buf := b.Alloc(kernels.I32, len(src))
	defer b.Free(buf)
	b.UploadI32(buf, src)
	got := make([]int32, len(src))
	b.DownloadI32(got, buf)
	for i := range src {
		if got[i] != src[i] {
			return fmt.Errorf("I32 round trip [%d]: uploaded %d, downloaded %d", i, src[i], got[i])
		}
	}
	return nil
}

func checkSliceAliases(b kernels.Backend) error {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16, kernels.I32} {
		parent := b.Alloc(dt, 10)
		view := parent.Slice(3, 4)
		if view.Len() != 4 || view.DType() != dt {
			return fmt.Errorf("%v Slice(3, 4) has Len %d DType %v", dt, view.Len(), view.DType())
		}
		inner := view.Slice(1, 2) // a view of a view starts at parent element 4
		want := make([]float32, 10)
		if dt == kernels.I32 {
			b.UploadI32(inner, []int32{5, 6})
			got := make([]int32, 10)
			b.DownloadI32(got, parent)
			for i := range got {
				w := int32(0)
				if i == 4 || i == 5 {
					w = int32(i + 1)
				}
				if got[i] != w {
					return fmt.Errorf("I32 upload through Slice(3,4).Slice(1,2): parent[%d] = %d, want %d", i, got[i], w)
				}
			}
		} else {
			b.Upload(inner, []float32{5, 6})
			want[4], want[5] = 5, 6
			got := make([]float32, 10)
			b.Download(got, parent)
			for i := range got {
				if got[i] != want[i] {
					return fmt.Errorf("%v upload through Slice(3,4).Slice(1,2): parent[%d] = %v, want %v", dt, i, got[i], want[i])
				}
			}
			part := make([]float32, 4)
			b.Download(part, view)
			if part[0] != 0 || part[1] != 5 || part[2] != 6 || part[3] != 0 {
				return fmt.Errorf("%v Download of Slice(3,4) = %v, want [0 5 6 0]", dt, part)
			}
		}
		b.Free(parent)
	}
	return nil
}

func checkCopy(b kernels.Backend) error {
	e := newEnv(b, 1)
	defer e.free()
	src := e.in("src", e.uniform(19, 3))
	dst := e.out("dst", nans(19))
	b.Copy(dst.view, src.view)
	if err := e.checkAll(); err != nil {
		return err
	}
	if err := Compare("F32 Copy", dst.result(b), src.values(), Tol{}); err != nil {
		return err
	}
	is := e.ints("isrc", []int32{4, -9, 77, 0, 1 << 30})
	id := b.Alloc(kernels.I32, 5)
	defer b.Free(id)
	b.Copy(id, is.view)
	got := make([]int32, 5)
	b.DownloadI32(got, id)
	for i, v := range got {
		if v != is.i[guard+i] {
			return fmt.Errorf("I32 Copy [%d] = %d, want %d", i, v, is.i[guard+i])
		}
	}
	bs := e.floats("bsrc", kernels.BF16, e.uniform(6, 2), true)
	bd := e.floats("bdst", kernels.BF16, nans(6), false)
	b.Copy(bd.view, bs.view)
	if err := e.checkAll(); err != nil {
		return err
	}
	return Compare("BF16 Copy", bd.result(b), bs.values(), Tol{})
}
