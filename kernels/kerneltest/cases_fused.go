package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// checkCast checks a fused op's bf16 output: it must be exactly the op's
// own f32 output rounded to bf16 (nearest-even), so the GEMM that reads it
// sees what rounding the f32 activations would have given.
func checkCast(b kernels.Backend, cast *operand, f32Out []float32) error {
	want := make([]float64, len(f32Out))
	for i, v := range f32Out {
		want[i] = float64(RoundBF16(v))
	}
	return Compare(cast.name, cast.result(b), want, tolExact)
}

// addRMSNormCases cover no residual (r nil), sum aliasing x or r (the
// model updates the residual stream in place), out aliasing x without a
// residual (the head's norm in place), BF16 weights, the optional rstd and
// bf16 cast, and a zero row and a row at the eps scale.
func addRMSNormCases() []Case {
	type shape struct {
		rows, dim  int
		residual   bool
		alias      string // "none", "sum=x", "sum=r", "out=x" (no residual)
		w          kernels.DType
		rstd, cast bool
	}
	shapes := []shape{
		{1, 1, false, "none", kernels.F32, true, false},
		{3, 7, true, "none", kernels.F32, false, true},
		{5, 64, true, "sum=x", kernels.BF16, true, true},
		{4, 1000, true, "sum=r", kernels.F32, true, false},
		{2, 1024, false, "none", kernels.BF16, false, true},
		{9, 130, true, "sum=x", kernels.BF16, true, true},
		{6, 300, false, "out=x", kernels.BF16, true, true},
	}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(4400+i)
		name := fmt.Sprintf("rows=%d,dim=%d,residual=%v,alias=%s,w=%v,rstd=%v,cast=%v", s.rows, s.dim, s.residual, s.alias, s.w, s.rstd, s.cast)
		cs = append(cs, Case{Op: "AddRMSNorm", Name: name, check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			n := s.rows * s.dim
			xv, rv := addNormEdgeRows(e.uniform(n, 1), e.uniform(n, 1), s.rows, s.dim)
			var x, r, sum *operand
			switch s.alias {
			case "sum=x":
				x, r = e.out("x", xv), e.in("r", rv)
				sum = x
			case "sum=r":
				x, r = e.in("x", xv), e.out("r", rv)
				sum = r
			case "out=x":
			default:
				x = e.in("x", xv)
				if s.residual {
					r, sum = e.in("r", rv), e.out("sum", nans(n))
				}
			}
			w := e.floats("w", s.w, e.uniform(s.dim, 2), true)
			var out *operand
			if s.alias == "out=x" {
				x = e.out("x", xv)
				out = x
			} else {
				out = e.out("out", nans(n))
			}
			var rstd, cast *operand
			if s.rstd {
				rstd = e.out("rstd", nans(s.rows))
			}
			if s.cast {
				cast = e.floats("outBF16", kernels.BF16, nans(n), false)
			}
			var rVals []float64
			if r != nil {
				rVals = r.values()
			}
			wantSum, wantOut, wantRstd := RefAddRMSNorm(x.values(), rVals, w.values(), s.rows, s.dim, 1e-6)
			b.AddRMSNorm(view(sum), out.view, view(cast), view(rstd), x.view, view(r), w.view, s.rows, s.dim, 1e-6)
			if err := e.checkAll(); err != nil {
				return err
			}
			if sum != nil {
				if err := Compare("sum", sum.result(b), wantSum, tolExact); err != nil {
					return err
				}
			}
			gotOut := out.result(b)
			if err := Compare("out", gotOut, wantOut, tolReduction); err != nil {
				return err
			}
			if rstd != nil {
				if err := Compare("rstd", rstd.result(b), wantRstd, tolReduction); err != nil {
					return err
				}
			}
			if cast != nil {
				return checkCast(b, cast, gotOut)
			}
			return nil
		}})
	}
	return cs
}

// view is o's view, or nil for an absent optional operand.
func view(o *operand) kernels.Buffer {
	if o == nil {
		return nil
	}
	return o.view
}

// swiGLURowsCases cover width 1, odd widths, the overflow-prone gates of
// swiGLUCases and the bf16 cast.
func swiGLURowsCases() []Case {
	shapes := [][2]int{{1, 1}, {3, 13}, {7, 500}, {2, 1024}}
	var cs []Case
	for i, s := range shapes {
		for _, cast := range []bool{false, true} {
			rows, width, cast, seed := s[0], s[1], cast, uint64(4500+i)
			cs = append(cs, Case{Op: "SwiGLURows", Name: fmt.Sprintf("rows=%d,width=%d,cast=%v", rows, width, cast), check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				gu := e.uniform(rows*2*width, 8)
				extremes := []float32{-1000, -90, -30, -1e-3, 0, 1e-3, 30, 90, 1000}
				if width >= len(extremes) {
					copy(gu[width:], extremes) // gates of row 1 (or row 0's ups when rows = 1)
					copy(gu, extremes)
				}
				gateUp := e.in("gateUp", gu)
				out := e.out("out", nans(rows*width))
				var c *operand
				if cast {
					c = e.floats("outBF16", kernels.BF16, nans(rows*width), false)
				}
				want := RefSwiGLURows(gateUp.values(), rows, width)
				b.SwiGLURows(out.view, view(c), gateUp.view, rows, width)
				if err := e.checkAll(); err != nil {
					return err
				}
				got := out.result(b)
				if err := Compare("out", got, want, tolElementwise); err != nil {
					return err
				}
				if c != nil {
					return checkCast(b, c, got)
				}
				return nil
			}})
		}
	}
	return cs
}

// matMulBF16ACases: A stored as BF16 (a fused op's cast) with a BF16 B,
// all four transposes. bf16×bf16 products are exact in f32, so against the
// reference over the stored values only the summation order differs
// (tolMatMulBF16, which covers tensor cores' truncating adds).
func matMulBF16ACases() []Case {
	shapes := [][3]int{{1, 1, 1}, {5, 7, 9}, {17, 13, 33}, {64, 48, 96}}
	var cs []Case
	for i, s := range shapes {
		for tr := 0; tr < 4; tr++ {
			m, n, k := s[0], s[1], s[2]
			tA, tB, seed := tr&1 != 0, tr&2 != 0, uint64(4600+10*i+tr)
			cs = append(cs, Case{Op: "MatMul", Name: fmt.Sprintf("m=%d,n=%d,k=%d,tA=%v,tB=%v,A=bf16,B=bf16,beta=0.5", m, n, k, tA, tB), check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				a := e.floats("A", kernels.BF16, e.uniform(m*k, 1), true)
				bm := e.floats("B", kernels.BF16, e.uniform(k*n, 1), true)
				c := e.out("C", e.uniform(m*n, 1))
				want := RefMatMul(a.values(), bm.values(), c.values(), m, n, k, tA, tB, 1.5, 0.5)
				b.MatMul(c.view, a.view, bm.view, m, n, k, tA, tB, 1.5, 0.5)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("C", c.result(b), want, tolMatMulBF16)
			}})
		}
	}
	return cs
}

// loRAShrinkCases cover degenerate sizes, a decode-sized q/k/v group (48
// ranks over 64 inputs) and many rows, with x and xa in f32 and bf16
// (a bf16 one may take a bf16 GEMM: lora_bf16.go), tiles with ragged
// edges (130 rows, 80 inputs, 72 ranks against 64 × 64 × 32 tiles).
func loRAShrinkCases() []Case {
	type shape struct {
		rows, in, ranks int
		x, xa           kernels.DType
	}
	f, h := kernels.F32, kernels.BF16
	shapes := []shape{{1, 1, 1, f, f}, {3, 17, 5, f, f}, {9, 64, 48, f, f}, {9, 64, 48, h, f}, {130, 96, 24, h, f},
		{130, 80, 72, h, h}, {70, 96, 40, f, h}}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(4700+i)
		cs = append(cs, Case{Op: "LoRAShrink", Name: fmt.Sprintf("rows=%d,in=%d,ranks=%d,x=%v,xa=%v", s.rows, s.in, s.ranks, s.x, s.xa), check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			x := e.floats("x", s.x, e.uniform(s.rows*s.in, 1), true)
			a := e.in("A", e.uniform(s.ranks*s.in, 1))
			xa := e.floats("xa", s.xa, nans(s.rows*s.ranks), false)
			want := RefLoRAShrink(x.values(), a.values(), s.rows, s.in, s.ranks)
			b.LoRAShrink(xa.view, x.view, a.view, s.rows, s.in, s.ranks)
			if err := e.checkAll(); err != nil {
				return err
			}
			if s.x == kernels.F32 && s.xa == kernels.F32 {
				return Compare("xa", xa.result(b), want, tolMatMul)
			}
			wantRounded := RefLoRAShrink(roundedBF16(x.values()), roundedBF16(a.values()), s.rows, s.in, s.ranks)
			return compareBF16GEMM("xa", xa.result(b), want, wantRounded, s.xa == kernels.BF16)
		}})
	}
	return cs
}

// loraLayout is a LoRA op's parts: their ranks, outputs and scales, and
// which Y matrix (by index, with its width) each writes at which offset.
type loraLayout struct {
	name  string
	yCols []int // width of each Y matrix
	parts []RefLoRAPart
}

// loraLayouts: one projection (o_proj), q/k/v into one fused output, and
// gate/up into separate outputs wider than the part.
var loraLayouts = []loraLayout{
	{"single", []int{7}, []RefLoRAPart{{Rank: 3, Out: 7, Scale: 2, Y: 0, YCols: 7}}},
	{"fused3", []int{40}, []RefLoRAPart{
		{Rank: 4, Out: 24, Scale: 0.5, Y: 0, YCols: 40, YOff: 0},
		{Rank: 2, Out: 8, Scale: 0.5, Y: 0, YCols: 40, YOff: 24},
		{Rank: 8, Out: 8, Scale: -1.5, Y: 0, YCols: 40, YOff: 32}}},
	{"separate2", []int{300, 280}, []RefLoRAPart{
		{Rank: 16, Out: 260, Scale: 2, Y: 0, YCols: 300, YOff: 33},
		{Rank: 1, Out: 280, Scale: 1, Y: 1, YCols: 280, YOff: 0}}},
}

func (l loraLayout) ranks() int {
	r := 0
	for _, p := range l.parts {
		r += p.Rank
	}
	return r
}

// operands allocates the Ys (of dtype yDT, initial values ys) and the
// parts' B (and, with grads, DB) on e, and returns the kernels parts.
func (l loraLayout) operands(e *env, rows int, yDT kernels.DType, yInput, grads bool) (parts []kernels.LoRAPart, ys, bs, dbs []*operand) {
	for i, w := range l.yCols {
		ys = append(ys, e.floats(fmt.Sprintf("Y%d", i), yDT, e.uniform(rows*w, 1), yInput))
	}
	for i, p := range l.parts {
		bo := e.in(fmt.Sprintf("B%d", i), e.uniform(p.Out*p.Rank, 1))
		bs = append(bs, bo)
		kp := kernels.LoRAPart{B: bo.view, Rank: p.Rank, Out: p.Out, Scale: float32(p.Scale), Y: ys[p.Y].view, YCols: p.YCols, YOff: p.YOff}
		if grads && i != len(l.parts)-1 || grads && len(l.parts) == 1 {
			db := e.out(fmt.Sprintf("DB%d", i), e.uniform(p.Out*p.Rank, 1))
			dbs = append(dbs, db)
			kp.DB = db.view
		} else {
			dbs = append(dbs, nil) // the last of several parts has no gradient wanted
		}
		parts = append(parts, kp)
	}
	return parts, ys, bs, dbs
}

func (l loraLayout) refParts(bs []*operand) []RefLoRAPart {
	ps := append([]RefLoRAPart(nil), l.parts...)
	for i := range ps {
		ps[i].B = bs[i].values()
	}
	return ps
}

// loRAExpandCases run every layout over 1, 5 and 70 rows; the Ys hold
// values beforehand, so an expand that overwrites instead of adding, or
// writes outside its part's columns, is caught. 70 rows also run with a
// BF16 xa (a bf16 GEMM may take it), and with BF16 Ys (lora_bf16.go)
// beside either xa, as do 5 rows.
func loRAExpandCases() []Case {
	var cs []Case
	for li, l := range loraLayouts {
		for ri, c := range loraDTypeRuns {
			l, c, seed := l, c, uint64(4800+10*li+ri)
			rows := c.rows
			cs = append(cs, Case{Op: "LoRAExpand", Name: fmt.Sprintf("%s,rows=%d,xa=%v%s", l.name, rows, c.xa, c.ySuffix()), check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				parts, ys, bs, _ := l.operands(e, rows, c.y, false, false)
				xa := e.floats("xa", c.xa, e.uniform(rows*l.ranks(), 1), true)
				var ysv [][]float64
				for _, y := range ys {
					ysv = append(ysv, y.values())
				}
				want := RefLoRAExpand(xa.values(), l.refParts(bs), ysv, rows)
				roundedParts := l.refParts(bs)
				for i := range roundedParts {
					roundedParts[i].B = roundedBF16(roundedParts[i].B)
				}
				wantRounded := RefLoRAExpand(xa.values(), roundedParts, ysv, rows)
				b.LoRAExpand(xa.view, parts, rows)
				if err := e.checkAll(); err != nil {
					return err
				}
				for i, y := range ys {
					if err := compareLoRA(y.name, y.result(b), want[i], wantRounded[i], c.xa == kernels.BF16, c.y == kernels.BF16); err != nil {
						return err
					}
				}
				return nil
			}})
		}
	}
	return append(cs, loRAMixedYCase("LoRAExpand"))
}
