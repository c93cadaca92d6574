package emu

import (
	"maps"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
)

// TestTrafficCountsAttentionInputsBF16 holds cuda.Traffic of
// AttentionInputs and its backward over a bf16 model's activations to
// their shapes at their dtypes, worked out by hand: 5 tokens, 2 gated q
// heads and 1 kv head of 16, so a qkv row is 2·2·16 + 2·16 = 96 wide; q,
// gate, qPre, kPre, qkv, dqkv, dq, dgate at 2 bytes, rstd, invFreq and the
// f32 cache gradients at 4, the bf16 caches at 2 (k and v, a row per
// token), the norms tagged as weights.
func TestTrafficCountsAttentionInputsBF16(t *testing.T) {
	b := New()
	defer b.Close()
	const nTok, nHead, nKV, hd = 5, 2, 1, 16
	const qd, kd, width = nHead * hd, nKV * hd, 2*nHead*hd + 2*nKV*hd
	bf, f32 := kernels.BF16, kernels.F32
	alloc := func(dt kernels.DType, n int) kernels.Buffer {
		x := b.Alloc(dt, n)
		b.Upload(x, make([]float32, n))
		return x
	}
	q, gate, qPre, kPre := alloc(bf, nTok*qd), alloc(bf, nTok*qd), alloc(bf, nTok*qd), alloc(bf, nTok*kd)
	rq, rk := alloc(f32, nTok*nHead), alloc(f32, nTok*nKV)
	kc, vc := alloc(bf, 8*kd), alloc(bf, 8*kd)
	qkv, dqkv := alloc(bf, nTok*width), alloc(bf, nTok*width)
	dq, dgate := alloc(bf, nTok*qd), alloc(bf, nTok*qd)
	dkc, dvc := alloc(f32, 8*kd), alloc(f32, 8*kd)
	qn, kn, inv := alloc(bf, hd), alloc(bf, hd), alloc(f32, hd/2)
	b.TagWeights(qn)
	b.TagWeights(kn)
	seq, pos, table := b.Alloc(kernels.I32, nTok), b.Alloc(kernels.I32, nTok), b.Alloc(kernels.I32, 1)
	b.UploadI32(seq, make([]int32, nTok))
	b.UploadI32(pos, []int32{0, 1, 2, 3, 4})
	b.UploadI32(table, []int32{0})
	pages := kernels.KVPages{Table: table, BlockSize: 8, MaxBlocks: 1}
	tr := b.CountTraffic()
	b.AttentionInputs(q, gate, qPre, kPre, rq, rk, kc, vc, qkv, nil, nil, nil, qn, kn, inv, seq, pos, pages, nTok, nHead, nKV, hd, hd, 1e-6)
	b.AttentionInputsBackward(dqkv, dq, dgate, dkc, dvc, qPre, kPre, rq, rk, qn, kn, inv, seq, pos, pages, nTok, nHead, nKV, hd, hd)
	b.StopTraffic()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{"invFreq": 4 * hd / 2, "seq": 4 * nTok, "pos": 4 * nTok, "pages.Table": 4}
	want := cuda.Traffic{
		"AttentionInputs/q": 2 * nTok * qd, "AttentionInputs/gate": 2 * nTok * qd,
		"AttentionInputs/qPre": 2 * nTok * qd, "AttentionInputs/kPre": 2 * nTok * kd,
		"AttentionInputs/rstdQ": 4 * nTok * nHead, "AttentionInputs/rstdK": 4 * nTok * nKV,
		"AttentionInputs/caches": 2 * 2 * nTok * kd, "AttentionInputs/qkv": 2 * nTok * width,
		"AttentionInputsBackward/dqkv": 2 * nTok * width, "AttentionInputsBackward/dq": 2 * nTok * qd,
		"AttentionInputsBackward/dgate": 2 * nTok * qd, "AttentionInputsBackward/caches": 2 * 4 * nTok * kd,
		"AttentionInputsBackward/qPre": 2 * nTok * qd, "AttentionInputsBackward/kPre": 2 * nTok * kd,
		"AttentionInputsBackward/rstdQ": 4 * nTok * nHead, "AttentionInputsBackward/rstdK": 4 * nTok * nKV,
	}
	for _, op := range []string{"AttentionInputs", "AttentionInputsBackward"} {
		for name, n := range ids {
			want[op+"/"+name] = n
		}
	}
	if !maps.Equal(tr, want) {
		t.Errorf("traffic %v, want %v", tr, want)
	}
	for _, x := range []kernels.Buffer{q, gate, qPre, kPre, rq, rk, kc, vc, qkv, dqkv, dq, dgate, dkc, dvc, qn, kn, inv, seq, pos, table} {
		b.Free(x)
	}
}
