package cpu

import (
	"math"
	"math/bits"

	"github.com/grpo-dev/grpo/kernels"
)

// AddI32 is out = a + b over int32, wrapping as Go's addition does.
func (be *Backend) AddI32(out, a, b kernels.Buffer, n int) {
	positive("AddI32", n)
	os, as, bs := ints("AddI32", "out", out, n), ints("AddI32", "a", a, n), ints("AddI32", "b", b, n)
	for i := range n {
		os[i] = as[i] + bs[i]
	}
}

// SampleStream draws each row's u from its PCG state (pcgFloat64) when the
// row's temperature is positive, writes it into the row's params as the
// device does, and samples the rows with Sample's math.
func (be *Backend) SampleStream(token, logprob, logits, params, state kernels.Buffer, rows, vocab int) {
	const op = "SampleStream"
	positive(op, vocab)
	if rows == 0 {
		return
	}
	pw := ints(op, "params", params, rows*kernels.SampleParamWords)
	st := ints(op, "state", state, rows*kernels.PCGWords)
	u := make([]float64, rows)
	p := make([]kernels.SampleParams, rows)
	for r := range rows {
		w := pw[r*kernels.SampleParamWords : (r+1)*kernels.SampleParamWords]
		u[r], p[r] = kernels.UnpackSampleParams(w)
		if p[r].Temperature > 0 {
			s := st[r*kernels.PCGWords : (r+1)*kernels.PCGWords]
			hi, lo := kernels.UnpackPCG(s)
			u[r], hi, lo = pcgFloat64(hi, lo)
			kernels.PackPCG(s, hi, lo)
			w[0], w[1] = int32(uint32(bitsOf(u[r]))), int32(uint32(bitsOf(u[r])>>32))
		}
	}
	be.Sample(token, logprob, logits, rows, vocab, u, p)
}

// pcgFloat64 is one step of the 128-bit PCG with the DXSM output (the
// generator of Go's math/rand/v2, whose fields hi and lo are the state)
// turned into a float64 in [0, 1) as rand.Rand.Float64 does: the next
// state, then the low 53 bits of the output over 2⁵³.
func pcgFloat64(hi, lo uint64) (u float64, nhi, nlo uint64) {
	const (
		mulHi = 2549297995355413924
		mulLo = 4865540595714422341
		incHi = 6364136223846793005
		incLo = 1442695040888963407
	)
	h, l := bits.Mul64(lo, mulLo)
	h += hi*mulLo + lo*mulHi
	l, c := bits.Add64(l, incLo, 0)
	h, _ = bits.Add64(h, incHi, c)
	x := h
	x ^= x >> 32
	x *= 0xda942042e4dd58b5
	x ^= x >> 48
	x *= l | 1
	return float64(x<<11>>11) / (1 << 53), h, l
}

func bitsOf(f float64) uint64 { return math.Float64bits(f) }
