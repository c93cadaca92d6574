package emu

import (
	"fmt"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// The training attention's memory traffic per micro-batch (issue 33 item
// 7), f32 flash kernels (attention_flash.cu, attention_flash_backward.cu)
// against the tensor-core ones (attention_flash_tc.cu,
// attention_flash_tc_backward.cu). attnTraffic walks each kernel's loops —
// blocks, sequences, tiles, the dK/dV pass's table entries and query
// tiles — and adds the bytes each global load and store requests (L2 hits
// included: an upper bound on HBM traffic). The tensor-core kernels'
// cp.async loads are also counted by emu (GRPO_COUNT_READ), and
// TestAttentionTrafficModelMatchesEmu holds the walk to that count.

// attnTrafficShape is a packed micro-batch: sequences of lens tokens,
// positions 0.., in one identity-table cache of blockSize rows a sequence.
type attnTrafficShape struct {
	lens                       []int
	nHead, nKV, headDim, block int
}

// attnBytes are one kernel family's bytes, split as emu counts them.
type attnBytes struct {
	cpAsync     map[string]int64 // per tensor-core kernel: the cp.async reads
	read, write int64            // every load and store
}

// segments calls fn(first, last) for each sequence a block of rows
// r0..r0+n-1 handles (the kernels' loop over sequences), with the key
// range its rows in that sequence read: 0 (no window) to their largest
// position.
func (s attnTrafficShape) segments(r0, n int, fn func(first, last int)) {
	group := s.nHead / s.nKV
	t0 := 0
	for _, L := range s.lens {
		lo, hi := max(r0, t0*group), min(r0+n, (t0+L)*group) // the block's rows in this sequence
		if lo < hi {
			fn(0, (hi-1)/group-t0)
		}
		t0 += L
	}
}

func (s attnTrafficShape) tokens() int {
	n := 0
	for _, L := range s.lens {
		n += L
	}
	return n
}

// traffic walks forward + backward of the f32 kernels (tc false) or the
// tensor-core kernels (tc true) over every KV head. Small per-row words
// (seq, pos, lse, D) are counted too; the block table and sinks are not.
func (s attnTrafficShape) traffic(tc bool) attnBytes {
	const rowsPerBlock = 64 // FLASH_ROWS, FTC_ROWS: query rows of a forward or dQ block, keys of a dK/dV block
	group, hd := s.nHead/s.nKV, int64(s.headDim)
	nTok := s.tokens()
	nRows := nTok * group
	b := attnBytes{cpAsync: map[string]int64{}}
	opB := int64(4) // q, K, V (and dO in the dK/dV pass): f32, or bf16 on tensor cores
	qrows, tpl := rowsPerBlock, 0
	var fwd, dq string
	dkdv := []string{""}
	if tc {
		opB, tpl = 2, ftcTemplate(s.headDim)
		qrows = ftcQueryTile(tpl)
		fwd, dq = fmt.Sprintf("attention_flash_tc_hd%d", tpl), fmt.Sprintf("attention_flash_tc_dq_hd%d", tpl)
		dkdv = []string{fmt.Sprintf("attention_flash_tc_dkdv_hd%d_dkdv", tpl)}
		if tpl >= 256 {
			dkdv = []string{fmt.Sprintf("attention_flash_tc_dkdv_hd%d_dv", tpl), fmt.Sprintf("attention_flash_tc_dkdv_hd%d_dk", tpl)}
		}
	}
	// staged is a tile load: cp.async on the tensor-core path.
	staged := func(kernel string, n int64) {
		b.read += n
		if tc {
			b.cpAsync[kernel] += n
		}
	}
	validRows := func(r0, n int) int64 { return int64(max(0, min(n, nRows-r0))) }
	for range s.nKV {
		// Forward and dQ pass: blocks of 64 query rows, each reading its
		// sequences' keys first..last once (tiles stop at last).
		for r0 := 0; r0 < nRows; r0 += rowsPerBlock {
			rows := validRows(r0, rowsPerBlock)
			staged(fwd, rows*hd*opB)        // q
			b.read += rows * 8              // seq, pos
			b.write += rows*hd*4 + rows*4   // out, lse
			staged(dq, rows*hd*opB)         // q
			b.read += 3*rows*hd*4 + rows*12 // the dO tile, D = Σ dout·out, seq, pos, lse
			b.write += rows * hd * 4        // dq
			if tc {
				b.write += rows*hd*2 + rows*4 // dob, dD for the dK/dV pass
			}
			s.segments(r0, rowsPerBlock, func(first, last int) {
				keys := int64(last - first + 1)
				staged(fwd, 2*keys*hd*opB) // K, V
				staged(dq, 2*keys*hd*opB)
			})
		}
		// dK/dV pass: tiles of 64 rows of each cache block; the identity
		// table maps block q to sequence q, positions 0.. .
		t0 := 0
		for _, L := range s.lens {
			for row0 := 0; row0 < s.block; row0 += rowsPerBlock {
				last := min(L-1, row0+rowsPerBlock-1)
				for _, k := range dkdv {
					b.read += int64(nTok) * 8 // the entry's scan of seq and pos
					if last < row0 {
						continue // no query reaches these rows
					}
					keys := int64(last - row0 + 1)
					staged(k, 2*keys*hd*opB) // K, V
					for r0 := 0; r0 < nRows; r0 += qrows {
						rows := validRows(r0, qrows)
						if tc {
							b.read += rows * 16 // seq, pos, lse, dD
						} else {
							b.read += rows*12 + 2*rows*hd*4 // seq, pos, lse, and D = Σ dout·out again for every tile
						}
						// A row of the tile in sequence q at a position ≥ row0?
						lo, hi := r0/group, (r0+int(rows)-1)/group
						if hi < t0+row0 || lo > t0+L-1 {
							continue
						}
						staged(k, 2*rows*hd*opB) // q, dO (the dQ pass's bf16 dob on tensor cores)
					}
				}
				if last >= row0 {
					keys := int64(last - row0 + 1)
					b.read += 2 * keys * hd * 4  // dk, dv += : read …
					b.write += 2 * keys * hd * 4 // … and written, once
				}
			}
			t0 += L
		}
	}
	return b
}

// The tensor-core kernels' template head dim and tiles (flash_tc.cuh).
func ftcTemplate(headDim int) int {
	for _, hd := range []int{64, 128, 256} {
		if headDim <= hd {
			return hd
		}
	}
	panic("head dim above 256")
}
func ftcKeyTile(hd int) int {
	if hd >= 256 {
		return 32
	}
	return 64
}
func ftcQueryTile(hd int) int {
	if hd >= 128 {
		return 32
	}
	return 64
}

// TestAttentionTrafficModelMatchesEmu holds the walk to what emu counts:
// the cp.async bytes of each tensor-core kernel in backwardRun's packed
// batch (sequences of 70, 33 and 5 tokens, GQA 2, headDim 64), exactly.
func TestAttentionTrafficModelMatchesEmu(t *testing.T) {
	_, _, d := backwardRun(t, kernels.BF16, kernels.BF16)
	model := attnTrafficShape{lens: []int{70, 33, 5}, nHead: 4, nKV: 2, headDim: 64, block: 80}.traffic(true)
	if len(model.cpAsync) != 3 {
		t.Fatalf("the walk names %d kernels, want 3: %v", len(model.cpAsync), model.cpAsync)
	}
	for k, want := range model.cpAsync {
		if got := int64(d.ReadBytes(k)); got != want {
			t.Errorf("%s: emu counted %d bytes of cp.async, the walk %d", k, got, want)
		}
	}
}

// TestAttentionTrafficTable logs the training attention's bytes and
// FLOPs per micro-batch (forward with lse, then the backward), f32
// kernels against tensor-core kernels, and their H200 rooflines
// (BENCHMARKS.md), and requires the tensor-core kernels to move less.
func TestAttentionTrafficTable(t *testing.T) {
	for _, m := range []struct {
		name   string
		layers int
		s      attnTrafficShape
	}{
		{"qwen3-tiny, 4 × 64", 2, attnTrafficShape{lens: []int{64, 64, 64, 64}, nHead: 4, nKV: 2, headDim: 32, block: 64}},
		{"qwen3-tiny, 4 × 512", 2, attnTrafficShape{lens: []int{512, 512, 512, 512}, nHead: 4, nKV: 2, headDim: 32, block: 512}},
		{"Qwen3-8B, 4 × 4096", 36, attnTrafficShape{lens: []int{4096, 4096, 4096, 4096}, nHead: 32, nKV: 8, headDim: 128, block: 4096}},
	} {
		var visible int64
		for _, L := range m.s.lens {
			visible += int64(L) * int64(L+1) / 2
		}
		// 2·headDim FLOPs a product per head and visible key: 2 forward
		// (S, P·V), 7 backward (S and dP twice, dV, dK, dQ).
		flops := int64(m.layers) * 9 * 2 * int64(m.s.headDim) * int64(m.s.nHead) * visible
		f32, tc := m.s.traffic(false), m.s.traffic(true)
		L := int64(m.layers)
		for _, x := range []struct {
			kind string
			b    attnBytes
			peak float64 // FLOP/s the kernel's products run at
		}{{"f32 kernels", f32, 67e12}, {"tensor-core kernels", tc, 989e12}} {
			read, write := L*x.b.read, L*x.b.write
			tb := float64(read+write) / 4.8e12
			var cp int64
			for _, n := range x.b.cpAsync {
				cp += L * n
			}
			t.Logf("%s, %s: read %.4g GB (%d B, %d B of it cp.async), written %.4g GB (%d B); %.4g TFLOP; HBM %.4g ms, compute %.4g ms at %.0f TFLOP/s (%.4g ms at 989)",
				m.name, x.kind, float64(read)/1e9, read, cp, float64(write)/1e9, write, float64(flops)/1e12, tb*1e3, float64(flops)/x.peak*1e3, x.peak/1e12, float64(flops)/989e12*1e3)
		}
		if tc.read+tc.write >= f32.read+f32.write {
			t.Errorf("%s: the tensor-core kernels move %d bytes, the f32 ones %d", m.name, tc.read+tc.write, f32.read+f32.write)
		}
	}
}
