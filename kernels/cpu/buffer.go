package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// buffer is a Go slice; F32 and BF16 use f, I32 uses i, U8 u. A view
// shares the parent's array through a capacity-limited subslice.
type buffer struct {
	dt   kernels.DType
	f    []float32
	i    []int32
	u    []byte
	view bool
}

func (b *buffer) Len() int {
	switch b.dt {
	case kernels.I32:
		return len(b.i)
	case kernels.U8:
		return len(b.u)
	}
	return len(b.f)
}

func (b *buffer) DType() kernels.DType { return b.dt }

func (b *buffer) Slice(off, n int) kernels.Buffer {
	if off < 0 || n < 0 || off+n > b.Len() {
		panic(fmt.Sprintf("cpu: Slice(%d, %d) of a %v buffer of %d elements", off, n, b.dt, b.Len()))
	}
	v := &buffer{dt: b.dt, view: true}
	switch b.dt {
	case kernels.I32:
		v.i = b.i[off : off+n : off+n]
	case kernels.U8:
		v.u = b.u[off : off+n : off+n]
	default:
		v.f = b.f[off : off+n : off+n]
	}
	return v
}

func (*Backend) Alloc(dt kernels.DType, n int) kernels.Buffer {
	if n < 0 {
		panic(fmt.Sprintf("cpu: Alloc(%v, %d)", dt, n))
	}
	switch dt {
	case kernels.F32, kernels.BF16:
		return &buffer{dt: dt, f: make([]float32, n)}
	case kernels.I32:
		return &buffer{dt: dt, i: make([]int32, n)}
	case kernels.U8:
		return &buffer{dt: dt, u: make([]byte, n)}
	}
	panic(fmt.Sprintf("cpu: Alloc of unknown %v", dt))
}

// Free drops the storage; the garbage collector reclaims it once no view
// refers to it either.
func (*Backend) Free(b kernels.Buffer) {
	buf := own("Free", "b", b)
	if buf.view {
		panic("cpu: Free of a view; free the buffer it was sliced from")
	}
	buf.f, buf.i, buf.u = nil, nil, nil
}

func (*Backend) Upload(dst kernels.Buffer, src []float32) {
	sameLen("Upload", dst, len(src))
	d := floats("Upload", "dst", dst, len(src))
	if dst.DType() == kernels.BF16 {
		for j, v := range src {
			d[j] = roundBF16(v)
		}
		return
	}
	copy(d, src)
}

func (*Backend) UploadBF16(dst kernels.Buffer, src []uint16) {
	sameLen("UploadBF16", dst, len(src))
	d := floats("UploadBF16", "dst", dst, len(src))
	for j, h := range src {
		d[j] = math.Float32frombits(uint32(h) << 16)
	}
}

func (*Backend) UploadI32(dst kernels.Buffer, src []int32) {
	sameLen("UploadI32", dst, len(src))
	copy(ints("UploadI32", "dst", dst, len(src)), src)
}

func (*Backend) UploadU8(dst kernels.Buffer, src []byte) {
	sameLen("UploadU8", dst, len(src))
	copy(u8("UploadU8", "dst", dst, len(src)), src)
}

func (*Backend) Download(dst []float32, src kernels.Buffer) {
	sameLen("Download", src, len(dst))
	copy(dst, floats("Download", "src", src, len(dst)))
}

func (*Backend) DownloadI32(dst []int32, src kernels.Buffer) {
	sameLen("DownloadI32", src, len(dst))
	copy(dst, ints("DownloadI32", "src", src, len(dst)))
}

func (*Backend) Copy(dst, src kernels.Buffer) {
	if dst.DType() != src.DType() || dst.Len() != src.Len() {
		panic(fmt.Sprintf("cpu.Copy: dst is %v×%d, src is %v×%d", dst.DType(), dst.Len(), src.DType(), src.Len()))
	}
	switch src.DType() {
	case kernels.I32:
		copy(own("Copy", "dst", dst).i, own("Copy", "src", src).i)
		return
	case kernels.U8:
		copy(own("Copy", "dst", dst).u, own("Copy", "src", src).u)
		return
	}
	copy(own("Copy", "dst", dst).f, own("Copy", "src", src).f)
}

// Float32s returns the storage of an F32 or BF16 buffer of this backend (a
// view gives its subslice). Values written to a BF16 buffer this way must
// already be bf16-representable, or it stops behaving as bf16.
func Float32s(b kernels.Buffer) []float32 {
	buf := own("Float32s", "b", b)
	if buf.dt != kernels.F32 && buf.dt != kernels.BF16 {
		panic(fmt.Sprintf("cpu.Float32s of a %v buffer", buf.dt))
	}
	return buf.f
}

// Int32s returns the storage of an I32 buffer of this backend.
func Int32s(b kernels.Buffer) []int32 {
	buf := own("Int32s", "b", b)
	if buf.dt != kernels.I32 {
		panic(fmt.Sprintf("cpu.Int32s of a %v buffer; use Float32s", buf.dt))
	}
	return buf.i
}

// roundBF16 rounds to the nearest bfloat16, ties to even, and widens back.
func roundBF16(v float32) float32 {
	u := math.Float32bits(v)
	if v != v {
		return math.Float32frombits((u | 0x00400000) &^ 0xffff) // stay a (quiet) NaN
	}
	u += 0x7fff + (u>>16)&1
	return math.Float32frombits(u &^ 0xffff)
}
