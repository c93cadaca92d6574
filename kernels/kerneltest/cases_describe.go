package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// describeCases hold Backend.Describe to what the backend does and to
// kernels' table of devices, which callers read before a backend exists
// (estimates, config validation): a description that drifted from either
// would size memory or pick code paths wrongly above kernels.
func describeCases() []Case {
	return []Case{{Op: "Describe", Name: "name,device table,graphs,bf16 GEMM,KV cache dtype", check: checkDescribe}}
}

func checkDescribe(b kernels.Backend) error {
	d := b.Describe()
	if d.Name != b.Name() {
		return fmt.Errorf("Describe().Name = %q, but the backend's Name is %q", d.Name, b.Name())
	}
	if s := d.Storage(kernels.BF16); s != kernels.BF16 && s != kernels.F32 {
		return fmt.Errorf("BF16 buffers stored as %v; want bf16 or f32", s)
	}
	if want, ok := kernels.DescribeDevice(d.Name); ok && d != want {
		return fmt.Errorf("Describe() = %+v, but kernels' device table says %+v", d, want)
	}
	if _, graphs := b.(kernels.Graphs); d.Graphs != graphs {
		return fmt.Errorf("Describe().Graphs = %v, but the backend implements kernels.Graphs: %v", d.Graphs, graphs)
	}
	// 1 + 2⁻¹⁰ is not a bfloat16 (8 significant bits): times a BF16 one it
	// stays itself with A in f32 and becomes 1 when A is rounded to bf16.
	x := float32(1 + 1.0/1024)
	a, w, c := b.Alloc(kernels.F32, 1), b.Alloc(kernels.BF16, 1), b.Alloc(kernels.F32, 1)
	defer func() { b.Free(a); b.Free(w); b.Free(c) }()
	b.Upload(a, []float32{x})
	b.Upload(w, []float32{1})
	b.MatMul(c, a, w, 1, 1, 1, false, false, 1, 0)
	if err := b.Sync(); err != nil {
		return err
	}
	got := make([]float32, 1)
	b.Download(got, c)
	want := x
	if d.BF16GEMM {
		want = 1
	}
	if got[0] != want {
		return fmt.Errorf("BF16GEMM = %v, but MatMul of %v by a bf16 1 gave %v, want %v", d.BF16GEMM, x, got[0], want)
	}
	return checkKVCacheDType(b, d, x)
}

// checkKVCacheDType writes x (not a bfloat16) into a one-row cache of the
// dtype Describe names for the KV cache and reads it back: bf16 rounds it
// to 1, f32 keeps it.
func checkKVCacheDType(b kernels.Backend, d kernels.Description, x float32) error {
	if d.KVCache != kernels.F32 && d.KVCache != kernels.BF16 {
		return fmt.Errorf("KV cache dtype %v; want f32 or bf16", d.KVCache)
	}
	cache, row, zero := b.Alloc(d.KVCache, 1), b.Alloc(kernels.F32, 1), b.Alloc(kernels.I32, 1)
	defer func() { b.Free(cache); b.Free(row); b.Free(zero) }()
	b.Upload(row, []float32{x})
	b.KVWrite(cache, row, zero, zero, kernels.KVPages{Table: zero, BlockSize: 1, MaxBlocks: 1}, 1, 1)
	got := make([]float32, 1)
	b.Download(got, cache)
	if err := b.Sync(); err != nil {
		return err
	}
	want := x
	if d.KVCache == kernels.BF16 {
		want = 1
	}
	if got[0] != want {
		return fmt.Errorf("KVCache = %v, but KVWrite of %v read back %v, want %v", d.KVCache, x, got[0], want)
	}
	return nil
}
