package model_test

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// TestPrefillFLOPsOnEmu: a prefill forward (no adapter) counts every
// projection's GEMM per token, attention 4·q per head and visible key,
// and the LM head at the logit rows only.
func TestPrefillFLOPsOnEmu(t *testing.T) {
	be := emu.New()
	defer be.Close()
	m, err := model.Load("../testdata/models/qwen3-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config
	cache := m.NewKVCache(2, 16)
	defer cache.Free()
	var b model.Batch
	var keys int64
	for s, n := range []int{9, 5} {
		for i := range n {
			b.Add(s, i, int32(i+s))
			keys += int64(i) + 1
		}
	}
	logitRows := []int32{8, 13}
	before := be.Counts()
	logits, err := m.Forward(cache, &b, logitRows)
	if err != nil {
		t.Fatal(err)
	}
	be.Free(logits)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	h, q, kv, inter := int64(c.HiddenSize), int64(c.NumHeads*c.HeadDim), int64(c.NumKVHeads*c.HeadDim), int64(c.IntermediateSize)
	n := int64(b.Len())
	perLayer := 2*n*(h*(q+2*kv)+q*h+3*h*inter) + 4*q*keys
	want := int64(c.NumLayers)*perLayer + 2*int64(len(logitRows))*h*int64(c.VocabSize)
	if got := be.Counts().Sub(before).FLOPs; got != want {
		t.Errorf("prefill: %d FLOPs counted, %d by hand (%+d)", got, want, got-want)
	}
}

// TestMoEPrefillFLOPsOnEmu: on the Qwen3-MoE tiny model a prefill counts
// the router's GEMM (2·hidden·experts a token) and the grouped expert
// GEMMs (GroupedMatMul reports 2·rows·n·k: each token's top-k experts'
// gate/up and down, 6·hidden·moe_intermediate an expert) beside attention.
func TestMoEPrefillFLOPsOnEmu(t *testing.T) {
	be := emu.New()
	defer be.Close()
	m, err := model.Load("../testdata/models/qwen3-moe-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config
	if c.SparseLayers() != c.NumLayers {
		t.Fatalf("qwen3-moe-tiny has %d sparse layers of %d; the count below assumes all", c.SparseLayers(), c.NumLayers)
	}
	cache := m.NewKVCache(1, 16)
	defer cache.Free()
	var b model.Batch
	for i := range 11 {
		b.Add(0, i, int32(3*i+1))
	}
	before := be.Counts()
	logits, err := m.Forward(cache, &b, []int32{10})
	if err != nil {
		t.Fatal(err)
	}
	be.Free(logits)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	h, q, kv := int64(c.HiddenSize), int64(c.NumHeads*c.HeadDim), int64(c.NumKVHeads*c.HeadDim)
	e, k, mi := int64(c.NumExperts), int64(c.NumExpertsPerTok), int64(c.MoEIntermediateSize)
	n, keys := int64(b.Len()), int64(11*12/2)
	perLayer := 2*n*(h*(q+2*kv)+q*h) + 4*q*keys + 2*n*h*e + n*k*6*h*mi
	want := int64(c.NumLayers)*perLayer + 2*h*int64(c.VocabSize)
	if got := be.Counts().Sub(before).FLOPs; got != want {
		t.Errorf("MoE prefill: %d FLOPs counted, %d by hand (%+d)", got, want, got-want)
	}
}
