package model

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// TestCacheSizesMatchAllocation: the sizes Config reports are what the
// caches allocate (KVCache.Bytes sums the buffers themselves), so a
// caller sizing a pool from them sizes the real one.
func TestCacheSizesMatchAllocation(t *testing.T) {
	m := NewRandom(tinyConfig("qwen3"), cpu.New(), 7)
	c := m.Config
	dt := PagedKVDType(m.Backend.Describe())
	paged, err := m.NewPagedKVCache(3, 37, 8, 11)
	if err != nil {
		t.Fatal(err)
	}
	defer paged.Free()
	if got, want := paged.Bytes(), 11*c.KVBlockBytes(8, dt)+KVTableBytes(3*int64(BlocksFor(37, 8))); got != want {
		t.Errorf("paged cache holds %d B, Config says %d", got, want)
	}
	flat := m.NewKVCache(2, 20)
	defer flat.Free()
	if got, want := flat.Bytes(), 2*20*c.KVPositionBytes(kernels.F32)+KVTableBytes(2); got != want {
		t.Errorf("contiguous cache holds %d B, Config says %d", got, want)
	}
	if got, want := c.KVPositionBytes(kernels.BF16), int64(c.NumLayers)*2*int64(c.NumKVHeads*c.HeadDim)*2; got != want {
		t.Errorf("bf16 position %d B, want %d", got, want)
	}
}
