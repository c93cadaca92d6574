package cpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// TestAttentionSameWhereverBlocksLie runs the same queries (Attention,
// then AttentionBackward with dout = q) over the same logical keys and
// values held twice in one paged cache: sequence 0 in adjacent blocks
// (read in place), sequence 1 in scattered ones (gathered into scratch).
// Outputs, lse, dq and the two copies' dk, dv rows must be bit for bit
// equal: a sliding-window pool, prefix sharing and the trainer's
// bit-exact resume rely on it. Decode steps at every position put the
// gathered keys at every offset in the scratch, and a head size of 5
// puts keys read in place off 16-byte boundaries; gonum's A·Bᵀ sums in
// an order set by each B row's address mod 16, so it is forced here
// whatever BLAS is installed (with OpenBLAS, the auto case checks that
// dQ is not summed per run of blocks).
func TestAttentionSameWhereverBlocksLie(t *testing.T) {
	for _, hd := range []int{16, 5} { // 5: rows of 40 bytes, off 16-byte boundaries
		attentionPlacement(t, hd)
	}
}

func attentionPlacement(t *testing.T, hd int) {
	const nHead, nKV, bs, maxBlocks = 4, 2, 3, 8 // blocks of 3 rows of 5·2: 120 bytes, so alignment varies by block
	rowW, ctx := nKV*hd, bs*maxBlocks
	scattered := []int32{15, 9, 13, 8, 14, 10, 12, 11} // no block followed by its successor
	rng := rand.New(rand.NewPCG(7, 8))
	rnd := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		return v
	}
	keys, vals, qs := rnd(ctx*rowW), rnd(ctx*rowW), rnd(ctx*nHead*hd)
	for _, blas := range []cpu.BLAS{cpu.BLASGonum, cpu.BLASAuto} {
		be := cpu.New(cpu.WithBLAS(blas))
		table := make([]int32, 2*maxBlocks)
		kc, vc := make([]float32, 2*maxBlocks*bs*rowW), make([]float32, 2*maxBlocks*bs*rowW)
		for j := range maxBlocks {
			table[j], table[maxBlocks+j] = int32(j), scattered[j]
			for _, b := range []int32{table[j], table[maxBlocks+j]} {
				copy(kc[int(b)*bs*rowW:][:bs*rowW], keys[j*bs*rowW:])
				copy(vc[int(b)*bs*rowW:][:bs*rowW], vals[j*bs*rowW:])
			}
		}
		pages := kernels.KVPages{Table: be.Alloc(kernels.I32, len(table)), BlockSize: bs, MaxBlocks: maxBlocks}
		be.UploadI32(pages.Table, table)
		k, v := be.Alloc(kernels.F32, len(kc)), be.Alloc(kernels.F32, len(vc))
		be.Upload(k, kc)
		be.Upload(v, vc)
		// run attends tokens at positions ps, once for each sequence, and
		// returns the two sequences' outputs and lse, and how many elements
		// of dq, dk and dv (dout = q) differ between the two.
		run := func(ps []int32, window int) (o0, o1, l0, l1 []float32, dGrad int) {
			n := len(ps)
			seq, pos := be.Alloc(kernels.I32, 2*n), be.Alloc(kernels.I32, 2*n)
			q, out, lse := be.Alloc(kernels.F32, 2*n*nHead*hd), be.Alloc(kernels.F32, 2*n*nHead*hd), be.Alloc(kernels.F32, 2*n*nHead)
			sv, qv := make([]int32, 2*n), make([]float32, 2*n*nHead*hd)
			for i, p := range ps {
				sv[n+i] = 1
				copy(qv[i*nHead*hd:][:nHead*hd], qs[int(p)*nHead*hd:])
				copy(qv[(n+i)*nHead*hd:][:nHead*hd], qs[int(p)*nHead*hd:])
			}
			be.UploadI32(seq, sv)
			be.UploadI32(pos, append(append([]int32(nil), ps...), ps...))
			be.Upload(q, qv)
			av := kernels.AttentionVariant{Window: window}
			be.Attention(out, lse, q, k, v, seq, pos, pages, 2*n, nHead, nKV, hd, 0.25, av)
			ov, lv := make([]float32, 2*n*nHead*hd), make([]float32, 2*n*nHead)
			be.Download(ov, out)
			be.Download(lv, lse)
			dq, dk, dv := be.Alloc(kernels.F32, 2*n*nHead*hd), be.Alloc(kernels.F32, len(kc)), be.Alloc(kernels.F32, len(kc))
			be.Upload(dk, make([]float32, len(kc)))
			be.Upload(dv, make([]float32, len(kc)))
			be.AttentionBackward(dq, dk, dv, q, out, lse, q, k, v, seq, pos, pages, 2*n, nHead, nKV, hd, 0.25, av)
			dqv, dkv, dvv := make([]float32, 2*n*nHead*hd), make([]float32, len(kc)), make([]float32, len(kc))
			be.Download(dqv, dq)
			be.Download(dkv, dk)
			be.Download(dvv, dv)
			dGrad = bitDiffs(dqv[:n*nHead*hd], dqv[n*nHead*hd:])
			for p := range ctx {
				r0, r1 := int(table[p/bs])*bs+p%bs, int(table[maxBlocks+p/bs])*bs+p%bs
				dGrad += bitDiffs(dkv[r0*rowW:][:rowW], dkv[r1*rowW:][:rowW]) + bitDiffs(dvv[r0*rowW:][:rowW], dvv[r1*rowW:][:rowW])
			}
			return ov[:n*nHead*hd], ov[n*nHead*hd:], lv[:n*nHead], lv[n*nHead:], dGrad
		}
		prefill := make([]int32, ctx)
		for p := range prefill {
			prefill[p] = int32(p)
		}
		for _, window := range []int{0, 3} {
			batches := [][]int32{prefill}
			for p := range ctx {
				batches = append(batches, []int32{int32(p)})
			}
			for _, ps := range batches {
				o0, o1, l0, l1, dGrad := run(ps, window)
				if d := bitDiffs(o0, o1) + bitDiffs(l0, l1); d != 0 {
					t.Errorf("headDim %d, %s (BLAS %s), window %d, positions %d..%d: %d outputs and lse differ between adjacent and scattered blocks, max |Δout| %g, want bit for bit equal",
						hd, blas, be.BLASName(), window, ps[0], ps[len(ps)-1], d, maxDiff(o0, o1))
				}
				if dGrad != 0 {
					t.Errorf("headDim %d, %s (BLAS %s), window %d, positions %d..%d: %d elements of dq, dk, dv differ between adjacent and scattered blocks, want bit for bit equal",
						hd, blas, be.BLASName(), window, ps[0], ps[len(ps)-1], dGrad)
				}
			}
		}
	}
}

// bitDiffs counts the elements of a and b whose bits differ.
func bitDiffs(a, b []float32) int {
	n := 0
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			n++
		}
	}
	return n
}

func maxDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = max(m, math.Abs(float64(a[i]-b[i])))
	}
	return m
}
