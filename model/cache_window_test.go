package model

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// unpooledCache is a paged cache as NewPagedKVCache made one before the
// sliding layers had a pool of their own: every layer in one pool, so no
// block goes back before its sequence is released.
func unpooledCache(m *Model, slots, maxLen, blockSize, numBlocks int) *KVCache {
	c := m.newCache(slots, maxLen, blockSize, numBlocks, 0, m.Backend.Describe().KVCache, 0)
	c.linear = m.newLinearStates(slots)
	return c
}

// TestWindowPoolFreesBehindWindows decodes three rollouts of a 9-token
// prompt (prefilled once, forked twice) for 30 steps with a window of 3
// in layer 0 and full attention in layer 1, blocks of 4. The sliding
// layer's blocks go back to its pool as the windows pass them while the
// full layer keeps every block, and the logits are bit for bit those of
// a cache that frees nothing.
func TestWindowPoolFreesBehindWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	m := variantModel(cpu.New(), 11, []int{3, 0}, randomSinks(rng))
	v := m.Config.VocabSize
	const seqs, steps, maxLen, bs = 3, 30, 40, 4
	prompt := randomIDs(rng, 9, v)
	next := make([][]int32, seqs)
	for s := range next {
		next[s] = randomIDs(rng, steps, v)
	}
	pooled, err := m.NewPagedKVCache(seqs, maxLen, bs, seqs*10)
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Free()
	plain := unpooledCache(m, seqs, maxLen, bs, seqs*10)
	defer plain.Free()
	if pooled.window == nil || plain.window != nil {
		t.Fatal("want a sliding pool in NewPagedKVCache's cache only")
	}
	run := func(c *KVCache, b *Batch) []float32 {
		t.Helper()
		got, err := m.Logits(c, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	var pre Batch
	pre.Add(0, 0, prompt...)
	if d := maxAbsDiff(run(pooled, &pre), run(plain, &pre)); d != 0 {
		t.Fatalf("prefill: max |Δlogit| = %g, want 0", d)
	}
	for _, c := range []*KVCache{pooled, plain} {
		for s := 1; s < seqs; s++ {
			if err := c.Fork(s, 0, len(prompt)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range steps {
		var b Batch
		for s := range seqs {
			b.Add(s, len(prompt)+i, next[s][i])
		}
		if d := maxAbsDiff(run(pooled, &b), run(plain, &b)); d != 0 {
			t.Fatalf("step %d: max |Δlogit| = %g between the pooled and the unpooled cache, want 0", i, d)
		}
		if pooled.FreeBlocks() != plain.FreeBlocks() {
			t.Fatalf("step %d: the full layers' pool has %d free blocks, the unpooled cache %d: want the full layers to keep every block", i, pooled.FreeBlocks(), plain.FreeBlocks())
		}
		w := pooled.WindowPool()
		if used, mapped := w.Blocks-w.Free, distinctMapped(pooled.window.table); used != mapped || used > seqs*m.Config.WindowSeqBlocks(maxLen, bs) {
			t.Fatalf("step %d: %d sliding blocks in use, %d mapped, bound %d", i, used, mapped, seqs*m.Config.WindowSeqBlocks(maxLen, bs))
		}
	}
	// At position 38 a window of 3 reads 36..38: block 9 alone, one per
	// rollout; blocks 0..8 of slot 0 and 1..8 of the forks (which shared
	// only the blocks their window at 9 reaches) went back: 25 entries.
	// The prompt's partly filled block 2 was copied by the first two
	// writers, in both pools.
	w := pooled.WindowPool()
	if w.Blocks-w.Free != seqs || w.Dropped != 25 || pooled.WindowCopies() != 2 || pooled.Copies != 2 {
		t.Errorf("after decoding: %d sliding blocks in use (want %d), %d dropped (want 25), %d and %d copies on write (want 2, 2)",
			w.Blocks-w.Free, seqs, w.Dropped, pooled.WindowCopies(), pooled.Copies)
	}
	if used := pooled.NumBlocks - pooled.FreeBlocks(); used != 2+seqs*8 {
		t.Errorf("the full layers use %d blocks, want the prompt's 2 shared and 8 of each rollout's own", used)
	}
	// Slot 0 is past position 9's window: a fork at 9 would need block 1.
	if pooled.CanFork(0, len(prompt)) || !plain.CanFork(0, len(prompt)) {
		t.Errorf("CanFork at the prompt after decoding: pooled %v, unpooled %v; want false, true", pooled.CanFork(0, len(prompt)), plain.CanFork(0, len(prompt)))
	}
	pooled.Release(2)
	if err := pooled.Fork(2, 0, len(prompt)); err == nil || !strings.Contains(err.Error(), "sliding") {
		t.Errorf("fork of returned sliding blocks: %v, want an error naming the sliding layers' pool", err)
	}
	// A batch going back behind a window reads returned blocks: an error.
	var back Batch
	back.Add(0, 20, next[0][0])
	if _, err := m.Logits(pooled, &back, nil); err == nil || !strings.Contains(err.Error(), "never written") {
		t.Errorf("a batch behind the window: %v, want an error", err)
	}
	for s := range seqs {
		pooled.Release(s)
	}
	if w := pooled.WindowPool(); w.Free != w.Blocks || pooled.FreeBlocks() != pooled.NumBlocks {
		t.Errorf("after releasing every slot %d of %d sliding and %d of %d full blocks are free", w.Free, w.Blocks, pooled.FreeBlocks(), pooled.NumBlocks)
	}
	if err := pooled.ResetBlocks(); err != nil {
		t.Error(err)
	}
}

// distinctMapped is how many different blocks a table maps.
func distinctMapped(table []int32) int {
	var ids []int32
	for _, b := range table {
		if b >= 0 {
			ids = append(ids, b)
		}
	}
	slices.Sort(ids)
	return len(slices.Compact(ids))
}

// allocLog is the CPU backend with a record of every allocation.
type allocLog struct {
	*cpu.Backend
	allocs []string
}

func (a *allocLog) Alloc(dt kernels.DType, n int) kernels.Buffer {
	a.allocs = append(a.allocs, dt.String()+"×"+strconv.Itoa(n))
	return a.Backend.Alloc(dt, n)
}

// TestCacheAllocationsByWindows lists the buffers a paged cache of 3
// slots × 40 tokens in 30 blocks of 4 allocates on the tiny model (2
// layers, 2 KV heads × 16: rows of 32): without sliding layers exactly
// what every cache allocated before the sliding pool existed (K and V of
// 30 blocks per layer, one table of 3 × 10), whatever windowBlocks says;
// with layer 0 sliding and a pool of 7 blocks, layer 0's K and V hold 7
// blocks and the pool has a table of its own; and Bytes counts them.
func TestCacheAllocationsByWindows(t *testing.T) {
	for _, tc := range []struct {
		windows []int
		want    []string
		bytes   int64
	}{
		{nil, []string{"f32×3840", "f32×3840", "f32×3840", "f32×3840", "i32×30"}, 4*3840*4 + 30*4},
		{[]int{5, 0}, []string{"i32×30", "f32×896", "f32×896", "f32×3840", "f32×3840", "i32×30"}, 2*896*4 + 2*3840*4 + 2*30*4},
	} {
		be := &allocLog{Backend: cpu.New()}
		m := variantModel(be, 1, tc.windows, nil)
		be.allocs = nil
		c, err := m.NewPagedKVCacheWindowed(3, 40, 4, 30, 7)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(be.allocs, tc.want) || c.Bytes() != tc.bytes {
			t.Errorf("windows %v: allocated %v (%d bytes), want %v (%d bytes)", tc.windows, be.allocs, c.Bytes(), tc.want, tc.bytes)
		}
		if tc.windows == nil && c.WindowPool() != (WindowPoolStats{}) {
			t.Errorf("no sliding layers: a sliding pool %+v", c.WindowPool())
		}
		c.Free()
	}
}

// TestWindowPoolGptOssTiny runs the tiny gpt-oss checkpoint (layer 0
// sliding over 4 keys with sinks, layer 1 full; biased router, clamped
// SwiGLU experts) through a 7-token prompt and 24 decode steps of two
// forked rollouts, blocks of 4: logits bit for bit those of a cache that
// frees nothing, and each rollout ends holding BlocksFor(3)+1 = 2 sliding
// blocks or fewer.
func TestWindowPoolGptOssTiny(t *testing.T) {
	m, err := Load("../testdata/models/gpt_oss-tiny", cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.SlidingLayers() != 1 || m.Config.LargestWindow() != 4 {
		t.Fatalf("gpt_oss-tiny: %d sliding layers, window %d; want 1, 4", m.Config.SlidingLayers(), m.Config.LargestWindow())
	}
	rng := rand.New(rand.NewPCG(31, 32))
	v := m.Config.VocabSize
	const seqs, steps, maxLen, bs = 2, 24, 32, 4
	prompt := randomIDs(rng, 7, v)
	pooled, err := m.NewPagedKVCache(seqs, maxLen, bs, seqs*8)
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Free()
	plain := unpooledCache(m, seqs, maxLen, bs, seqs*8)
	defer plain.Free()
	var pre Batch
	pre.Add(0, 0, prompt...)
	batches := []*Batch{&pre}
	for i := range steps {
		var b Batch
		for s := range seqs {
			b.Add(s, len(prompt)+i, randomIDs(rng, 1, v)...)
		}
		batches = append(batches, &b)
	}
	for i, b := range batches {
		if i == 1 {
			for _, c := range []*KVCache{pooled, plain} {
				if err := c.Fork(1, 0, len(prompt)); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, err := m.Logits(pooled, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.Logits(plain, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(got, want); d != 0 {
			t.Fatalf("batch %d: max |Δlogit| = %g, want 0", i, d)
		}
	}
	if w := pooled.WindowPool(); w.Blocks-w.Free > seqs*m.Config.WindowSeqBlocks(maxLen, bs) || w.Dropped == 0 {
		t.Errorf("sliding pool after decoding: %+v; want at most %d in use, some returned", w, seqs*m.Config.WindowSeqBlocks(maxLen, bs))
	}
}
