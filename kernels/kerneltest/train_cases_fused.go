package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// swiGLURowsBackwardCases cover width 1, odd widths and the overflow-prone
// gates; dGateUp starts as NaN, so both halves must be written.
func swiGLURowsBackwardCases() []Case {
	shapes := [][2]int{{1, 1}, {3, 13}, {7, 500}}
	var cs []Case
	for i, s := range shapes {
		rows, width, seed := s[0], s[1], uint64(5400+i)
		cs = append(cs, trainCase("SwiGLURowsBackward", fmt.Sprintf("rows=%d,width=%d", rows, width), func(b kernels.Backend, tb kernels.TrainOps) error {
			e := newEnv(b, seed)
			defer e.free()
			gu := e.uniform(rows*2*width, 8)
			if width >= 9 {
				copy(gu, []float32{-1000, -90, -30, -1e-3, 0, 1e-3, 30, 90, 1000})
			}
			gateUp := e.in("gateUp", gu)
			dy := e.in("dy", e.uniform(rows*width, 2))
			d := e.out("dGateUp", nans(rows*2*width))
			want := RefSwiGLURowsBackward(dy.values(), gateUp.values(), rows, width)
			tb.SwiGLURowsBackward(d.view, dy.view, gateUp.view, rows, width)
			if err := e.checkAll(); err != nil {
				return err
			}
			return Compare("dGateUp", d.result(b), want, tolElementwise)
		}))
	}
	return cs
}

// loRAExpandBackwardCases run every layout of loRAExpandCases (over its
// loraDTypeRuns: a BF16 xa may take a bf16 GEMM, lora_bf16.go; a BF16 dY
// is read widened); DB starts with values (it accumulates), dxa as NaN (it
// is overwritten), and the last of several parts wants no B gradient.
// LoRA gradients must be bit-identical from run to run (no atomics, fixed
// summation order).
func loRAExpandBackwardCases() []Case {
	var cs []Case
	for li, l := range loraLayouts {
		for ri, c := range loraDTypeRuns {
			l, c, seed := l, c, uint64(5500+10*li+ri)
			rows, xaDT := c.rows, c.xa
			cs = append(cs, trainCase("LoRAExpandBackward", fmt.Sprintf("%s,rows=%d,xa=%v%s", l.name, rows, xaDT, c.ySuffix()), func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				parts, ys, bs, dbs := l.operands(e, rows, c.y, true, true)
				xa := e.floats("xa", xaDT, e.uniform(rows*l.ranks(), 1), true)
				dxa := e.out("dxa", nans(rows*l.ranks()))
				var ysv, ysRounded [][]float64
				for _, y := range ys {
					ysv, ysRounded = append(ysv, y.values()), append(ysRounded, roundedBF16(y.values()))
				}
				wantDxa, wantDB := RefLoRAExpandBackward(xa.values(), l.refParts(bs), ysv, rows)
				roundedParts := l.refParts(bs)
				for i := range roundedParts {
					roundedParts[i].B = roundedBF16(roundedParts[i].B)
				}
				roundedDxa, roundedDB := RefLoRAExpandBackward(xa.values(), roundedParts, ysRounded, rows)
				tb.LoRAExpandBackward(dxa.view, xa.view, parts, rows)
				if err := e.checkAll(); err != nil {
					return err
				}
				cmp := func(what string, got []float32, want, rounded []float64) error {
					return compareLoRA(what, got, want, rounded, xaDT == kernels.BF16, false)
				}
				if err := cmp("dxa", dxa.result(b), wantDxa, roundedDxa); err != nil {
					return err
				}
				for i, db := range dbs {
					if db == nil {
						continue
					}
					want, rounded := db.values(), db.values()
					for j := range want {
						want[j] += wantDB[i][j]
						rounded[j] += roundedDB[i][j]
					}
					if err := cmp(db.name, db.result(b), want, rounded); err != nil {
						return err
					}
				}
				return e.deterministic(append([]*operand{dxa}, dbs...), func() { tb.LoRAExpandBackward(dxa.view, xa.view, parts, rows) })
			}))
		}
	}
	return append(cs, loRAMixedYCase("LoRAExpandBackward"))
}

// loRAShrinkBackwardCases: dx and da accumulate into values already there,
// each may be skipped (nil), and a second run gives the same bits. dx is
// F32 or BF16 (rounded once at the store: lora_bf16.go), beside an F32 x
// and a BF16 one.
func loRAShrinkBackwardCases() []Case {
	type shape struct {
		rows, in, ranks int
		dx, da          bool
		x, dxDT         kernels.DType
	}
	f, h := kernels.F32, kernels.BF16
	shapes := []shape{{1, 1, 1, true, true, f, f}, {3, 17, 5, true, false, f, f}, {9, 64, 48, false, true, f, f}, {130, 96, 24, true, true, f, f},
		{130, 96, 24, true, true, h, f}, {70, 80, 72, true, false, h, f}, {9, 64, 48, false, true, h, f},
		{1, 1, 1, true, false, f, h}, {130, 96, 24, true, true, f, h}, {130, 96, 24, true, true, h, h}, {70, 80, 72, true, false, h, h}}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(5600+i)
		name := fmt.Sprintf("rows=%d,in=%d,ranks=%d,dx=%v,da=%v,x=%v", s.rows, s.in, s.ranks, s.dx, s.da, s.x)
		if s.dxDT == kernels.BF16 {
			name += ",dx bf16"
		}
		cs = append(cs, trainCase("LoRAShrinkBackward", name, func(b kernels.Backend, tb kernels.TrainOps) error {
			e := newEnv(b, seed)
			defer e.free()
			x := e.floats("x", s.x, e.uniform(s.rows*s.in, 1), true)
			a := e.in("A", e.uniform(s.ranks*s.in, 1))
			dxa := e.in("dxa", e.uniform(s.rows*s.ranks, 1))
			var dx, da *operand
			if s.dx {
				dx = e.floats("dx", s.dxDT, e.uniform(s.rows*s.in, 1), false)
			}
			if s.da {
				da = e.out("dA", e.uniform(s.ranks*s.in, 1))
			}
			wantDx, wantDa := RefLoRAShrinkBackward(dxa.values(), x.values(), a.values(), s.rows, s.in, s.ranks)
			roundedDx, roundedDa := RefLoRAShrinkBackward(roundedBF16(dxa.values()), x.values(), roundedBF16(a.values()), s.rows, s.in, s.ranks)
			tb.LoRAShrinkBackward(view(dx), view(da), dxa.view, x.view, a.view, s.rows, s.in, s.ranks)
			if err := e.checkAll(); err != nil {
				return err
			}
			for _, c := range []struct {
				o             *operand
				grad, rounded []float64
			}{{dx, wantDx, roundedDx}, {da, wantDa, roundedDa}} {
				if c.o == nil {
					continue
				}
				want, rounded := c.o.values(), c.o.values()
				for j := range want {
					want[j] += c.grad[j]
					rounded[j] += c.rounded[j]
				}
				if err := compareLoRA(c.o.name, c.o.result(b), want, rounded, s.x == kernels.BF16, c.o.dt == kernels.BF16); err != nil {
					return err
				}
			}
			return e.deterministic([]*operand{dx, da}, func() { tb.LoRAShrinkBackward(view(dx), view(da), dxa.view, x.view, a.view, s.rows, s.in, s.ranks) })
		}))
	}
	return cs
}

// deterministic restores outs (nil entries skipped) to their contents
// before the op, runs it again and requires bit-identical results.
func (e *env) deterministic(outs []*operand, run func()) error {
	first := make([][]float32, len(outs))
	for i, o := range outs {
		if o != nil {
			first[i] = o.result(e.b)
			e.b.Upload(o.parent, o.f)
		}
	}
	run()
	if err := e.b.Sync(); err != nil {
		return fmt.Errorf("second run: Sync: %w", err)
	}
	for i, o := range outs {
		if o == nil {
			continue
		}
		for j, v := range o.result(e.b) {
			if math.Float32bits(v) != math.Float32bits(first[i][j]) {
				return fmt.Errorf("%s[%d]: %v on the first run, %v on the second: not deterministic", o.name, j, first[i][j], v)
			}
		}
	}
	return nil
}
