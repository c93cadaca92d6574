package cpu

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Shape checks. A mismatch is a programming error in the caller, so it
// panics with the op and operand named, as kernels.Backend specifies.

// own returns b as this backend's buffer.
func own(op, name string, b kernels.Buffer) *buffer {
	buf, ok := b.(*buffer)
	if !ok || buf == nil {
		panic(fmt.Sprintf("cpu.%s: %s is %T, not a cpu buffer", op, name, b))
	}
	return buf
}

// floats returns the first n elements of an F32 or BF16 operand.
func floats(op, name string, b kernels.Buffer, n int) []float32 {
	buf := own(op, name, b)
	if buf.dt != kernels.F32 && buf.dt != kernels.BF16 {
		panic(fmt.Sprintf("cpu.%s: %s is %v, want f32 or bf16", op, name, buf.dt))
	}
	if n < 0 || len(buf.f) < n {
		panic(fmt.Sprintf("cpu.%s: %s has %d elements, shape needs %d", op, name, len(buf.f), n))
	}
	return buf.f[:n:n]
}

// f32 is floats restricted to F32: outputs and operands an op may write.
func f32(op, name string, b kernels.Buffer, n int) []float32 {
	if b.DType() != kernels.F32 {
		panic(fmt.Sprintf("cpu.%s: %s is %v, want f32", op, name, b.DType()))
	}
	return floats(op, name, b, n)
}

// floatsOut is floats for an output that may be F32 or BF16, with whether
// it is BF16: each value stored into it then goes through roundIf.
func floatsOut(op, name string, b kernels.Buffer, n int) ([]float32, bool) {
	return floats(op, name, b, n), b.DType() == kernels.BF16
}

// roundIf is v rounded to bf16 when bf16 is set (a BF16 output's store,
// where the GPU kernel rounds), v otherwise.
func roundIf(bf16 bool, v float32) float32 {
	if bf16 {
		return roundBF16(v)
	}
	return v
}

// roundAll rounds each of v to bf16 in place: a BF16 output whose values
// were summed in its f32 storage before the store the GPU rounds at.
func roundAll(v []float32) {
	for i, x := range v {
		v[i] = roundBF16(x)
	}
}

// roundAllIf is roundAll when bf16 is set.
func roundAllIf(bf16 bool, vs []float32) {
	if bf16 {
		roundAll(vs)
	}
}

// ints returns the first n elements of an I32 operand.
func ints(op, name string, b kernels.Buffer, n int) []int32 {
	buf := own(op, name, b)
	if buf.dt != kernels.I32 {
		panic(fmt.Sprintf("cpu.%s: %s is %v, want i32", op, name, buf.dt))
	}
	if n < 0 || len(buf.i) < n {
		panic(fmt.Sprintf("cpu.%s: %s has %d elements, shape needs %d", op, name, len(buf.i), n))
	}
	return buf.i[:n:n]
}

// u8 returns the first n elements of a U8 operand.
func u8(op, name string, b kernels.Buffer, n int) []byte {
	buf := own(op, name, b)
	if buf.dt != kernels.U8 {
		panic(fmt.Sprintf("cpu.%s: %s is %v, want u8", op, name, buf.dt))
	}
	if n < 0 || len(buf.u) < n {
		panic(fmt.Sprintf("cpu.%s: %s has %d elements, shape needs %d", op, name, len(buf.u), n))
	}
	return buf.u[:n:n]
}

// index checks that every value of idx is in [0, limit).
func index(op, name string, idx []int32, limit int) {
	for j, v := range idx {
		if v < 0 || int(v) >= limit {
			panic(fmt.Sprintf("cpu.%s: %s[%d] = %d, outside [0, %d)", op, name, j, v, limit))
		}
	}
}

func positive(op string, dims ...int) {
	for _, d := range dims {
		if d <= 0 {
			panic(fmt.Sprintf("cpu.%s: dimensions %v must be positive", op, dims))
		}
	}
}

// sameLen checks a host transfer: the host slice must match the buffer.
func sameLen(op string, b kernels.Buffer, host int) {
	if b.Len() != host {
		panic(fmt.Sprintf("cpu.%s: buffer has %d elements, host slice %d", op, b.Len(), host))
	}
}

// bf16Query checks the contract of a BF16 q (kernels.BF16AttentionHeadDim),
// which this backend computes with in f32 like any operand: BF16 caches
// beside it and a head dim that a GPU's tensor-core kernels tile, so a
// caller that runs here runs there.
func bf16Query(op string, q, kCache kernels.Buffer, headDim int) {
	if q.DType() != kernels.BF16 {
		return
	}
	if kCache.DType() != kernels.BF16 {
		panic(fmt.Sprintf("cpu.%s: q is bf16 but the caches are %v; bf16 attention needs bf16 caches", op, kCache.DType()))
	}
	if !kernels.BF16AttentionHeadDim(headDim) {
		panic(fmt.Sprintf("cpu.%s: bf16 attention needs headDim ≤ 256 and a multiple of 8, got %d", op, headDim))
	}
}

// bf16Out checks the contract of a BF16 attention activation (Attention's
// out; AttentionBackward's dq, dout and out): it needs a BF16 q beside it,
// as the GPU's tensor-core kernels are the ones that read and write bf16
// there.
func bf16Out(op, name string, x, q kernels.Buffer) {
	if x.DType() == kernels.BF16 && q.DType() != kernels.BF16 {
		panic(fmt.Sprintf("cpu.%s: %s is bf16 but q is %v; bf16 activations need a bf16 q", op, name, q.DType()))
	}
}
