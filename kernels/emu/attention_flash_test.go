package emu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// backwardRun is one AttentionBackward of a packed training batch (three
// sequences of 70, 33 and 5 tokens in one identity-table cache, GQA 2,
// headDim 64) with caches of dtype kvDT and q of qDT on a fresh emulated
// device: dq, dk and dv as downloaded, the atomic operations the
// backward's kernels made, and the device (for its per-kernel counts).
func backwardRun(t *testing.T, kvDT, qDT kernels.DType) (grads [3][]float32, atomics uint64, d *Device) {
	t.Helper()
	const nHead, nKV, headDim, maxLen = 4, 2, 64, 80
	lens := []int{70, 33, 5}
	var seqv, posv []int32
	for s, n := range lens {
		for p := range n {
			seqv, posv = append(seqv, int32(s)), append(posv, int32(p))
		}
	}
	nTok, width := len(seqv), nKV*headDim
	rng := rand.New(rand.NewPCG(7, 8))
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	d = NewDevice()
	b := newBackend(d)
	defer b.Close()
	up := func(dt kernels.DType, v []float32) kernels.Buffer {
		x := b.Alloc(dt, len(v))
		b.Upload(x, v)
		return x
	}
	upI := func(v []int32) kernels.Buffer {
		x := b.Alloc(kernels.I32, len(v))
		b.UploadI32(x, v)
		return x
	}
	nq, nc := nTok*nHead*headDim, len(lens)*maxLen*width
	q, k, v := up(qDT, fill(nq)), up(kvDT, fill(nc)), up(kvDT, fill(nc))
	seq, pos := upI(seqv), upI(posv)
	pages := kernels.KVPages{Table: upI(kernels.IdentityTable(len(lens))), BlockSize: maxLen, MaxBlocks: 1}
	out, lse := b.Alloc(kernels.F32, nq), b.Alloc(kernels.F32, nTok*nHead)
	scale := float32(0.125)
	b.Attention(out, lse, q, k, v, seq, pos, pages, nTok, nHead, nKV, headDim, scale, kernels.AttentionVariant{})
	dout := up(kernels.F32, fill(nq))
	dq, dk, dv := b.Alloc(kernels.F32, nq), b.Alloc(kernels.F32, nc), b.Alloc(kernels.F32, nc)
	before := d.AtomicsTotal()
	b.AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seq, pos, pages, nTok, nHead, nKV, headDim, scale, kernels.AttentionVariant{})
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	atomics = d.AtomicsTotal() - before
	for i, x := range []kernels.Buffer{dq, dk, dv} {
		grads[i] = make([]float32, x.Len())
		b.Download(grads[i], x)
	}
	return grads, atomics, d
}

// TestAttentionBackwardDeterministic: the FlashAttention-2 backward makes
// no atomic operation, and gives bit-identical dq, dk and dv run after run
// and with the blocks taken in reverse order, on f32 and bf16 caches and
// on the tensor-core kernels (bf16 q and caches), which must be the ones
// that ran: attention_flash_tc.cu's and attention_flash_tc_backward.cu's
// cp.async reads are counted.
func TestAttentionBackwardDeterministic(t *testing.T) {
	for _, x := range []struct{ kv, q kernels.DType }{{kernels.F32, kernels.F32}, {kernels.BF16, kernels.F32}, {kernels.BF16, kernels.BF16}} {
		dt := x.kv
		ref, atomics, d := backwardRun(t, x.kv, x.q)
		if atomics != 0 {
			t.Errorf("kv %v, q %v: the attention backward made %d atomic operations, want 0", x.kv, x.q, atomics)
		}
		if x.q == kernels.BF16 {
			for _, k := range []string{"attention_flash_tc_hd64", "attention_flash_tc_dq_hd64", "attention_flash_tc_dkdv_hd64_dkdv"} {
				if d.ReadBytes(k) == 0 {
					t.Errorf("bf16 q and caches: %s read nothing; the tensor-core kernels did not run", k)
				}
			}
		}
		for _, o := range []BlockOrder{Forward, Reverse} {
			prev := SetBlockOrder(o)
			got, _, _ := backwardRun(t, x.kv, x.q)
			SetBlockOrder(prev)
			for i, name := range []string{"dq", "dk", "dv"} {
				for j := range ref[i] {
					if math.Float32bits(got[i][j]) != math.Float32bits(ref[i][j]) {
						t.Errorf("kv %v, block order %d: %s[%d] = %g, first run %g: not bit-identical", dt, o, name, j, got[i][j], ref[i][j])
						break
					}
				}
			}
		}
	}
}

// TestScalarAttentionBackwardUsesAtomics checks the counter the test above
// relies on: the scalar kernel (headDim above 128) adds dk and dv with
// atomicAdd, and Atomics sees them.
func TestScalarAttentionBackwardUsesAtomics(t *testing.T) {
	d := NewDevice()
	b := newBackend(d)
	defer b.Close()
	const nHead, nKV, headDim, n = 1, 1, 160, 4
	one := func(dt kernels.DType, m int) kernels.Buffer { return b.Alloc(dt, m) }
	nq := n * nHead * headDim
	pos := one(kernels.I32, n)
	b.UploadI32(pos, []int32{0, 1, 2, 3})
	table := one(kernels.I32, 1)
	pages := kernels.KVPages{Table: table, BlockSize: n, MaxBlocks: 1}
	b.AttentionBackward(one(kernels.F32, nq), one(kernels.F32, nq), one(kernels.F32, nq), one(kernels.F32, nq), one(kernels.F32, nq),
		one(kernels.F32, n), one(kernels.F32, nq), one(kernels.F32, nq), one(kernels.F32, nq), one(kernels.I32, n), pos, pages, n, nHead, nKV, headDim, 1, kernels.AttentionVariant{})
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, want := d.Atomics("attention_backward_f32"), uint64(2*headDim*(1+2+3+4)); got != want {
		t.Fatalf("scalar attention backward: %d atomic operations counted, want %d (two per visible key and dim)", got, want)
	}
}
