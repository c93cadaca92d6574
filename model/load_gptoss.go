package model

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// gpt-oss's checkpoint layout of its experts (transformers' GptOssExperts
// and integrations/mxfp4.py). Each layer's experts are two Parameters
// used as x·W, so stored [experts, in, out]:
//
//	mlp.experts.gate_up_proj  [E, hidden, 2·I]  column 2j gate j, 2j+1 up j
//	mlp.experts.down_proj     [E, I, hidden]
//
// with biases gate_up_proj_bias [E, 2·I] (interleaved alike) and
// down_proj_bias [E, hidden]. The published checkpoints store the two
// Parameters in MXFP4 instead, transposed to [E, out, in] and cut into
// blocks of 32 along in:
//
//	<name>_blocks  [E, out, in/32, 16]  U8: two e2m1 values a byte, the
//	                                    low nibble first
//	<name>_scales  [E, out, in/32]      U8: the block's power of two, 2^(s−127)
//
// which convert_moe_packed_tensors dequantizes and transposes back. Load
// turns either form into grpo's stacked experts (MoEWeights: [E, out, in]
// with each expert's gate rows before its up rows): bf16 and MXFP4 in
// bf16 — MXFP4 values are exact in bf16, so an MXFP4 checkpoint loads bit
// for bit as the bf16 checkpoint of its dequantized weights — and f32 in
// f32. A backend that keeps bf16 weights bf16 (cuda, emu) keeps MXFP4
// experts MXFP4 instead (MoEWeights.GateUpMX, DownMX), decoded inside the
// grouped GEMM (GroupedMatMulMXFP4), with the same results.

// packedExperts is one of a layer's expert Parameters as gpt-oss stores
// it: name the bf16 Parameter (or the stem of its MXFP4 pair), in × out
// per expert, interleaved for gate_up_proj.
type packedExperts struct {
	name             string
	experts, in, out int
	// first and held are the experts the group holds, [first,
	// first+held): every expert, or an expert-parallel rank's.
	first, held int
	interleaved bool
	// mx is where MXFP4 experts go when the backend keeps them MXFP4.
	mx **kernels.MXFP4
}

// gptOssExpertSpecs sets the stacked groups' packed forms and appends the
// experts' biases.
func (c *Config) gptOssExpertSpecs(s []tensorSpec, mw *MoEWeights, gateUp, down *fusedSpec, prefix string) []tensorSpec {
	h, mi, ne := c.HiddenSize, c.MoEIntermediateSize, c.NumExperts
	first, held := c.heldExperts()
	p := prefix + "mlp.experts."
	gateUp.packed = &packedExperts{name: p + "gate_up_proj", experts: ne, in: h, out: 2 * mi, first: first, held: held, interleaved: true, mx: &mw.GateUpMX}
	down.packed = &packedExperts{name: p + "down_proj", experts: ne, in: mi, out: h, first: first, held: held, mx: &mw.DownMX}
	gateUpBias := tensorSpec{name: p + "gate_up_proj_bias", shape: []int{ne, 2 * mi}, dst: &mw.GateUpBias, f32: true, interleaved: true}
	downBias := tensorSpec{name: p + "down_proj_bias", shape: []int{ne, h}, dst: &mw.DownBias, f32: true}
	gateUpBias.held.first, gateUpBias.held.n = first, held
	downBias.held = gateUpBias.held
	return append(s, gateUpBias, downBias)
}

// srcRow is the Parameter's output index of grpo's row r: with gate and up
// interleaved, gate row j is 2j and up row j is 2j+1.
func (p *packedExperts) srcRow(r int) int {
	if !p.interleaved {
		return r
	}
	if half := p.out / 2; r < half {
		return 2 * r
	}
	return 2*(r-p.out/2) + 1
}

// load fills the group's buffer from the checkpoint's Parameter or its
// MXFP4 blocks and scales: a bf16 Parameter or MXFP4 into bf16 (MXFP4
// values are exact in bf16), an f32 or f16 one into f32, as every other
// family's experts load.
func (p *packedExperts) load(be kernels.Backend, g *fusedSpec, set *safetensors.Set) error {
	if t, ok := set.Tensor(p.name); ok {
		if want := []int{p.experts, p.in, p.out}; !shapeEqual(t.Shape, want) {
			return fmt.Errorf("tensor %q has shape %v but config.json implies %v ([experts, in, out])", p.name, t.Shape, want)
		}
		if bits, ok := t.BF16Bits(); ok {
			*g.dst = be.Alloc(kernels.BF16, g.size)
			be.UploadBF16(*g.dst, transposeExperts(p, bits))
			return nil
		}
		vals, err := t.Float32s()
		if err != nil {
			return fmt.Errorf("tensor %q: %v", p.name, err)
		}
		*g.dst = be.Alloc(kernels.F32, g.size)
		be.Upload(*g.dst, transposeExperts(p, vals))
		return nil
	}
	blocks, okB := set.Tensor(p.name + "_blocks")
	scales, okS := set.Tensor(p.name + "_scales")
	if !okB || !okS {
		return fmt.Errorf("neither tensor %q nor %q and %q is there; is this a gpt-oss checkpoint with this config.json?", p.name, p.name+"_blocks", p.name+"_scales")
	}
	if be.Describe().BF16Storage == kernels.BF16 {
		// A backend that reads bf16 weights as they are multiplies by
		// MXFP4 ones too (GroupedMatMulMXFP4): 4.25 bits an element
		// instead of bf16's 16.
		return p.keepMXFP4(be, blocks, scales)
	}
	bits, err := p.fromMXFP4(blocks, scales)
	if err != nil {
		return err
	}
	*g.dst = be.Alloc(kernels.BF16, g.size)
	be.UploadBF16(*g.dst, bits)
	return nil
}

// transposeExperts turns the held experts' values of a [E, in, out]
// Parameter into [held, out, in], rows reordered (srcRow).
func transposeExperts[T uint16 | float32](p *packedExperts, src []T) []T {
	per := p.in * p.out
	out := make([]T, p.held*per)
	for e := range p.held {
		dst, from := e*per, (p.first+e)*per
		for r := range p.out {
			sr := p.srcRow(r)
			for i := range p.in {
				out[dst+r*p.in+i] = src[from+i*p.out+sr]
			}
		}
	}
	return out
}

// fp4Values are the e2m1 values of a nibble: sign bit 3, then
// 0, 0.5, 1, 1.5, 2, 3, 4, 6 (code 8 is −0, as transformers' table has
// it; a Go constant −0 would be +0).
var fp4Values = [16]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6, math.Copysign(0, -1), -0.5, -1, -1.5, -2, -3, -4, -6}

// fromMXFP4 dequantizes the held experts' blocks and scales into
// [held, out, in] bf16, rows reordered (srcRow): element 32·b + 2·k + h of row r is nibble h
// (0: low) of byte k of block b, times 2^(scale − 127).
func (p *packedExperts) fromMXFP4(blocks, scales safetensors.Tensor) ([]uint16, error) {
	if err := p.checkMXFP4(blocks, scales); err != nil {
		return nil, err
	}
	nb := p.in / 32
	// Every (scale, code) pair's bf16 value, once: a checkpoint has
	// billions of elements and 256 × 16 distinct values.
	var table [256][16]uint16
	for s := range table {
		for c := range table[s] {
			table[s][c] = safetensors.F32ToBF16(float32(math.Ldexp(fp4Values[c], s-127)))
		}
	}
	bs, ss := blocks.Bytes(), scales.Bytes()
	out := make([]uint16, p.held*p.out*p.in)
	for e := range p.held {
		for r := range p.out {
			src := (p.first+e)*p.out + p.srcRow(r)
			dst := out[(e*p.out+r)*p.in : (e*p.out+r+1)*p.in]
			for b := range nb {
				t := &table[ss[src*nb+b]]
				for k, v := range bs[(src*nb+b)*16 : (src*nb+b+1)*16] {
					dst[32*b+2*k] = t[v&0x0f]
					dst[32*b+2*k+1] = t[v>>4]
				}
			}
		}
	}
	return out, nil
}

// checkMXFP4 checks the blocks' and scales' dtypes and shapes.
func (p *packedExperts) checkMXFP4(blocks, scales safetensors.Tensor) error {
	if p.in%32 != 0 {
		return fmt.Errorf("tensor %q: MXFP4 needs in_features %d to be a multiple of 32", blocks.Name, p.in)
	}
	nb := p.in / 32
	for _, c := range []struct {
		t     safetensors.Tensor
		shape []int
	}{{blocks, []int{p.experts, p.out, nb, 16}}, {scales, []int{p.experts, p.out, nb}}} {
		if c.t.DType != safetensors.U8 {
			return fmt.Errorf("tensor %q is %s, want U8 (MXFP4)", c.t.Name, c.t.DType)
		}
		if !shapeEqual(c.t.Shape, c.shape) {
			return fmt.Errorf("tensor %q has shape %v but config.json implies %v", c.t.Name, c.t.Shape, c.shape)
		}
	}
	return nil
}

// keepMXFP4 uploads the held experts' blocks and scales as they are,
// rows reordered (srcRow): the checkpoint's [E, out, in/32, 16] blocks
// are kernels.MXFP4's layout of [E, out, in] already.
func (p *packedExperts) keepMXFP4(be kernels.Backend, blocks, scales safetensors.Tensor) error {
	if err := p.checkMXFP4(blocks, scales); err != nil {
		return err
	}
	nb := p.in / 32
	bs, ss := blocks.Bytes(), scales.Bytes()
	codes, sc := make([]byte, p.held*p.out*nb*16), make([]byte, p.held*p.out*nb)
	for e := range p.held {
		for r := range p.out {
			dst, src := e*p.out+r, (p.first+e)*p.out+p.srcRow(r)
			copy(codes[dst*nb*16:(dst+1)*nb*16], bs[src*nb*16:(src+1)*nb*16])
			copy(sc[dst*nb:(dst+1)*nb], ss[src*nb:(src+1)*nb])
		}
	}
	w := &kernels.MXFP4{Codes: be.Alloc(kernels.U8, len(codes)), Scales: be.Alloc(kernels.U8, len(sc))}
	be.UploadU8(w.Codes, codes)
	be.UploadU8(w.Scales, sc)
	*p.mx = w
	return nil
}

// deinterleave reorders each row of width w from gate/up pairs (g0, u0,
// g1, u1, …) to grpo's halves (g0, g1, …, u0, u1, …).
func deinterleave(vals []float32, w int) []float32 {
	out := make([]float32, len(vals))
	for r := 0; r < len(vals)/w; r++ {
		for j := range w / 2 {
			out[r*w+j] = vals[r*w+2*j]
			out[r*w+w/2+j] = vals[r*w+2*j+1]
		}
	}
	return out
}
