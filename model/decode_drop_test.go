package model_test

import (
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// TestDecoderDropUnused: DropUnused frees the buckets no Load used since
// its last call, except those keep names; a dropped bucket is made (and
// captured) afresh when a step needs it again, and steps the same tokens.
func TestDecoderDropUnused(t *testing.T) {
	be := emu.New()
	defer be.Close()
	m, err := model.Load("../testdata/models/qwen3-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	cache := m.NewKVCache(8, 16)
	defer cache.Free()
	d := m.NewDecoder(8)
	defer d.Free()
	step := func(n int) []int32 {
		t.Helper()
		rows := make([]model.DecodeRow, n)
		for s := range rows {
			rows[s] = model.DecodeRow{Slot: int32(s), Token: int32(10 * s), Params: kernels.SampleParams{Temperature: 1, TopP: 1}, PCGHi: uint64(s), PCGLo: 1}
		}
		if err := d.Load(cache, rows, -1); err != nil { // no padding slot: a bucket of exactly n rows
			t.Fatal(err)
		}
		tok, lp := make([]int32, n), make([]float32, n)
		var out []int32
		for range 3 {
			if err := d.Step(cache, tok, lp); err != nil {
				t.Fatal(err)
			}
			out = append(out, tok...)
		}
		return out
	}
	pow2 := func(n int) bool { return n&(n-1) == 0 }
	first3 := step(3)
	step(4)
	step(5)
	d.DropUnused(pow2) // all three were used: none dropped
	if got := d.Buckets(); !slices.Equal(got, []int{3, 4, 5}) {
		t.Fatalf("after DropUnused with every bucket used: %v, want [3 4 5]", got)
	}
	step(5)
	d.DropUnused(pow2) // 3 unused and not kept; 4 unused but a power of two
	if got := d.Buckets(); !slices.Equal(got, []int{4, 5}) {
		t.Fatalf("after DropUnused with 5 used: %v, want [4 5]", got)
	}
	before := be.Counts()
	again := step(3)
	if c := be.Counts().Sub(before); c.Captures != 1 {
		t.Errorf("bucket 3 made afresh: %d captures, want 1", c.Captures)
	}
	if !slices.Equal(again, first3) {
		t.Errorf("bucket 3 made afresh steps %v, first made %v", again, first3)
	}
}
