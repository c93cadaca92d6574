package kerneltest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/grpo-dev/grpo/kernels"
)

// addI32Cases cover separate output, out aliasing a, and the wrap-around
// of int32 overflow.
func addI32Cases() []Case {
	var cs []Case
	for i, n := range []int{1, 7, 1001} {
		for _, alias := range []bool{false, true} {
			n, alias, seed := n, alias, uint64(2100+10*i)
			cs = append(cs, Case{Op: "AddI32", Name: fmt.Sprintf("n=%d,out=a:%v", n, alias), check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				av, bv := make([]int32, n), make([]int32, n)
				for j := range n {
					av[j], bv[j] = int32(e.rng.Uint32()), int32(e.rng.IntN(5))-2
				}
				av[0], bv[0] = math.MaxInt32, 1 // wraps to MinInt32
				a, bb := e.ints("a", av), e.ints("b", bv)
				out := a
				if alias {
					a.input = false
				} else {
					out = e.intsOut("out", n)
				}
				b.AddI32(out.view, a.view, bb.view, n)
				if err := e.checkAll(); err != nil {
					return err
				}
				got := make([]int32, n)
				b.DownloadI32(got, out.view)
				for j := range n {
					if want := av[j] + bv[j]; got[j] != want {
						return fmt.Errorf("out[%d] = %d, want %d + %d = %d", j, got[j], av[j], bv[j], want)
					}
				}
				return nil
			}})
		}
	}
	return cs
}

// sampleStreamCases run SampleStream for three steps over rows with every
// parameter set (greedy rows among them), each row's stream seeded
// differently, and check each step against math/rand/v2 — the PCG the
// host sampler draws from, as the reference of the device streams — and
// RefSample: the draws written into params, the states after each step,
// and the tokens and log-probs.
func sampleStreamCases() []Case {
	var cs []Case
	for i, shape := range [][2]int{{1, 17}, {2 * len(sampleParamSets), 97}} {
		rows, vocab, seed := shape[0], shape[1], uint64(2200+i)
		cs = append(cs, Case{Op: "SampleStream", Name: fmt.Sprintf("rows=%d,vocab=%d,steps=3", rows, vocab), check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			p := make([]kernels.SampleParams, rows)
			ref := make([]*rand.PCG, rows)
			packed := make([]int32, rows*kernels.PCGWords)
			for r := range rows {
				p[r] = sampleParamSets[(r+i)%len(sampleParamSets)]
				ref[r] = rand.NewPCG(e.rng.Uint64(), e.rng.Uint64())
				hi, lo := pcgState(ref[r])
				kernels.PackPCG(packed[r*kernels.PCGWords:], hi, lo)
			}
			pw := make([]int32, rows*kernels.SampleParamWords)
			kernels.PackSampleParams(pw, p, vocab)
			// Even guards: params and state hold float64 and uint64 words.
			params, state := e.words("params", pw), e.words("state", packed)
			token := e.intsOut("token", rows)
			logprob := e.out("logprob", nans(rows))
			for step := range 3 {
				vals := make([]float32, rows*vocab)
				for j := range vals {
					vals[j] = float32(2 * e.rng.NormFloat64())
				}
				logits := e.in(fmt.Sprintf("logits%d", step), vals)
				b.SampleStream(token.view, logprob.view, logits.view, params.view, state.view, rows, vocab)
				if err := e.checkAll(); err != nil {
					return err
				}
				gotTok, gotPw, gotSt := make([]int32, rows), make([]int32, len(pw)), make([]int32, len(packed))
				b.DownloadI32(gotTok, token.view)
				b.DownloadI32(gotPw, params.view)
				b.DownloadI32(gotSt, state.view)
				gotLp := logprob.result(b)
				for r := range rows {
					where := fmt.Sprintf("step %d, row %d (T %g)", step, r, p[r].Temperature)
					u := 0.0
					if p[r].Temperature > 0 {
						u = rand.New(ref[r]).Float64()
						if gu, _ := kernels.UnpackSampleParams(gotPw[r*kernels.SampleParamWords:]); gu != u {
							return fmt.Errorf("%s: draw %v, math/rand/v2's PCG gives %v", where, gu, u)
						}
					}
					wantHi, wantLo := pcgState(ref[r])
					if hi, lo := kernels.UnpackPCG(gotSt[r*kernels.PCGWords:]); hi != wantHi || lo != wantLo {
						return fmt.Errorf("%s: state %#x:%#x, want %#x:%#x", where, hi, lo, wantHi, wantLo)
					}
					wantTok, wantLp := RefSample(vals[r*vocab:(r+1)*vocab], p[r], u)
					if gotTok[r] != wantTok {
						return fmt.Errorf("%s: token %d, want %d", where, gotTok[r], wantTok)
					}
					if d := math.Abs(float64(gotLp[r]) - wantLp); !(d <= tolSampleLogprob*math.Max(1, math.Abs(wantLp))) {
						return fmt.Errorf("%s: log-prob %.9g, want %.9g", where, gotLp[r], wantLp)
					}
				}
			}
			return nil
		}})
	}
	return cs
}

// pcgState reads a PCG's hi and lo through its binary form ("pcg:", then
// hi and lo big-endian), the only way math/rand/v2 exposes them.
func pcgState(p *rand.PCG) (hi, lo uint64) {
	b, err := p.MarshalBinary()
	if err != nil || len(b) != 20 {
		panic(fmt.Sprintf("kerneltest: PCG.MarshalBinary: %d bytes, %v", len(b), err))
	}
	return binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint64(b[12:])
}

// words allocates an I32 operand that the op updates in place, with
// guards of four words so that its view starts 8-byte aligned.
func (e *env) words(name string, vals []int32) *operand {
	const g = 4
	n := len(vals)
	o := &operand{name: name, dt: kernels.I32, n: n}
	o.i = make([]int32, n+2*g)
	for j := range o.i {
		o.i[j] = math.MinInt32
	}
	copy(o.i[g:], vals)
	o.parent = e.b.Alloc(kernels.I32, n+2*g)
	e.b.UploadI32(o.parent, o.i)
	o.view = o.parent.Slice(g, n)
	o.guardOff = g
	e.ops = append(e.ops, o)
	return o
}
