package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// The MXFP4 grouped GEMM cases: the GroupedMatMul shapes with B in MXFP4
// (both layouts, ragged experts over several 64-row tiles, an expert with
// no rows, beta 0 over NaN and beta 1), each held to the float64
// reference over the decoded weights (A as is, or rounded to bf16 as a
// backend may round it for bf16 experts) and to the backend's own
// GroupedMatMul over the same values in a BF16 buffer, bit for bit on a
// backend that keeps bf16 weights (the CPU widens them and its GEMM's
// order depends on alignment: within f32 rounding there).

var mxfp4Shapes = []gmmShape{
	{9, 4, 2, 13, 32, true, true, 1, 0},
	{9, 4, 2, 32, 13, false, true, 0.5, 1},
	{33, 8, 2, 70, 64, true, true, 2, 1},
	{100, 3, 2, 72, 96, true, true, 1, 0},
	{100, 3, 2, 96, 72, false, true, 0.5, 1},
	{40, 16, 4, 64, 160, true, true, 1, 0},
}

// mxfp4GuardByte fills the guards of the codes and scales: a scale of
// 255 decodes to 2^128 (inf in f32), so a block read past the view
// poisons the result.
const mxfp4GuardByte = 0xff

// mxfp4Operand uploads codes and scales with guards on each side and
// returns the views and the parents (for Free).
func mxfp4Operand(b kernels.Backend, codes, scales []byte) (view kernels.MXFP4, parents []kernels.Buffer) {
	up := func(v []byte) (kernels.Buffer, kernels.Buffer) {
		g := make([]byte, len(v)+2*guard)
		for i := range g {
			g[i] = mxfp4GuardByte
		}
		copy(g[guard:], v)
		p := b.Alloc(kernels.U8, len(g))
		b.UploadU8(p, g)
		return p, p.Slice(guard, len(v))
	}
	pc, vc := up(codes)
	ps, vs := up(scales)
	return kernels.MXFP4{Codes: vc, Scales: vs}, []kernels.Buffer{pc, ps}
}

func groupedMatMulMXFP4Cases() []Case {
	var cs []Case
	for i, s := range mxfp4Shapes {
		s, seed := s, uint64(5600+i)
		name := fmt.Sprintf("rows=%d,experts=%d,n=%d,k=%d,tB=%v,alpha=%g,beta=%g", s.tokens*s.topK, s.experts, s.n, s.k, s.transB, s.alpha, s.beta)
		cs = append(cs, Case{Op: "GroupedMatMulMXFP4", Name: name, check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			nw := s.experts * s.n * s.k
			codes, scales := make([]byte, nw/2), make([]byte, nw/32)
			for i := range codes {
				codes[i] = byte(e.rng.Uint64())
			}
			for i := range scales {
				scales[i] = byte(120 + e.rng.IntN(8)) // 2^−7 … 2^0
			}
			w, parents := mxfp4Operand(b, codes, scales)
			defer func() {
				for _, p := range parents {
					b.Free(p)
				}
			}()
			vals := RefDequantMXFP4(codes, scales)
			w32 := make([]float32, nw)
			for i, v := range vals {
				w32[i] = float32(v)
			}
			bm := e.floats("b (bf16 twin)", kernels.BF16, w32, true)
			off, offOp, rows := e.groupedOperands(s.tokens, s.experts, s.topK)
			a := e.in("a", e.uniform(rows*s.k, 1))
			c0 := nans(rows * s.n)
			if s.beta != 0 {
				c0 = e.uniform(rows*s.n, 1)
			}
			c, twin := e.out("c", c0), e.out("c (bf16 twin)", c0)
			cIn := c.values()
			if s.beta == 0 {
				cIn = make([]float64, rows*s.n)
			}
			b.GroupedMatMulMXFP4(c.view, a.view, w, offOp.view, rows, s.experts, s.n, s.k, s.transB, s.alpha, s.beta)
			b.GroupedMatMul(twin.view, a.view, bm.view, offOp.view, rows, s.experts, s.n, s.k, s.transB, s.alpha, s.beta)
			if err := e.checkAll(); err != nil {
				return err
			}
			got, gotTwin := c.result(b), twin.result(b)
			if b.Describe().BF16Storage == kernels.BF16 {
				// The backend reads bf16 weights as they are: the one
				// kernel path, bit for bit.
				if err := sameAsBF16Twin(got, gotTwin); err != nil {
					return err
				}
			} else {
				// The CPU's GEMM sums in an order that depends on its
				// operands' alignment, which the twin's guards shift.
				tw := make([]float64, len(gotTwin))
				for i, v := range gotTwin {
					tw[i] = float64(v)
				}
				if err := Compare("c against GroupedMatMul over the bf16 weights", got, tw, tolMatMul); err != nil {
					return err
				}
			}
			want := RefGroupedMatMul(cIn, a.values(), vals, off, s.experts, s.n, s.k, s.transB, float64(s.alpha), float64(s.beta))
			errF32 := Compare("c", got, want, tolMatMul)
			if errF32 == nil {
				return nil
			}
			// A backend may round A to bf16 for bf16 (and so MXFP4)
			// experts, as GroupedMatMul's cases allow.
			ar := a.values()
			for i, v := range ar {
				ar[i] = float64(RoundBF16(float32(v)))
			}
			wantBF16 := RefGroupedMatMul(cIn, ar, vals, off, s.experts, s.n, s.k, s.transB, float64(s.alpha), float64(s.beta))
			if err := Compare("c", got, wantBF16, tolMatMulBF16); err != nil {
				return fmt.Errorf("%v (A in f32); %v (A rounded to bf16)", errF32, err)
			}
			return nil
		}})
	}
	return cs
}

// RefDequantMXFP4 decodes MXFP4 codes and scales (kernels.MXFP4): element
// i is the e2m1 code in byte i/2 (the low nibble for even i) times
// 2^(scales[i/32] − 127).
func RefDequantMXFP4(codes, scales []byte) []float64 {
	magnitude := [8]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	out := make([]float64, 2*len(codes))
	for i := range out {
		code := codes[i/2] & 0x0f
		if i%2 == 1 {
			code = codes[i/2] >> 4
		}
		v := magnitude[code&7] * math.Ldexp(1, int(scales[i/32])-127)
		if code&8 != 0 {
			v = -v
		}
		out[i] = v
	}
	return out
}

// sameAsBF16Twin requires GroupedMatMulMXFP4's c to equal, bit for bit,
// GroupedMatMul's over the dequantized weights in bf16 (twin).
func sameAsBF16Twin(got, twin []float32) error {
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(twin[i]) {
			return fmt.Errorf("c[%d] = %g, GroupedMatMul over the bf16 weights gives %g", i, got[i], twin[i])
		}
	}
	return nil
}
