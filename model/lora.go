package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Proj names a linear projection of a decoder layer, the unit LoRA adapts.
type Proj uint8

const (
	ProjQ Proj = iota
	ProjK
	ProjV
	ProjO
	ProjGate
	ProjUp
	ProjDown
	NumProj
)

var projNames = [NumProj]string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// String is the HF module name ("q_proj").
func (p Proj) String() string { return projNames[p] }

// Module is the path of the projection inside a layer ("self_attn.q_proj").
func (p Proj) Module() string {
	if p <= ProjO {
		return "self_attn." + projNames[p]
	}
	return "mlp." + projNames[p]
}

// ParseProj maps a PEFT target module name ("q_proj") to a Proj.
func ParseProj(name string) (Proj, error) {
	for i, n := range projNames {
		if n == name {
			return Proj(i), nil
		}
	}
	return 0, fmt.Errorf("unknown target module %q; valid: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (and gate, the routers of a mixture-of-experts model)", name)
}

// Dims returns the projection's (in, out) features under cfg.
func (c *Config) Dims(p Proj) (in, out int) {
	h, q, kv := c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	switch p {
	case ProjQ:
		if c.Arch().OutputGate {
			return h, 2 * q // each head [query | gate]
		}
		return h, q
	case ProjK, ProjV:
		return h, kv
	case ProjO:
		return q, h
	case ProjGate, ProjUp:
		return h, c.IntermediateSize
	default:
		return c.IntermediateSize, h
	}
}

// LoRA is one adapted projection: y = x·Wᵀ + Scale·(x·Aᵀ)·Bᵀ, with A
// rank × in and B out × rank as PEFT stores them. DA and DB receive
// gradients (accumulated) during Backward; they may be nil for inference.
type LoRA struct {
	A, B, DA, DB kernels.Buffer
	Rank         int
	Scale        float32
}

// Adapter supplies the LoRA of each projection, or nil where there is none.
// Package lora implements it; model only does the math.
type Adapter interface {
	LoRA(layer int, p Proj) *LoRA
}

// WithAdapter returns a model sharing m's weights that applies ad (nil for
// the bare base model, e.g. the KL reference policy).
func (m *Model) WithAdapter(ad Adapter) *Model {
	c := *m
	c.Adapter = ad
	return &c
}

func (m *Model) lora(layer int, p Proj) *LoRA {
	if m.Adapter == nil {
		return nil
	}
	return m.Adapter.LoRA(layer, p)
}

// part is l as the one part of a LoRA op whose output is columns [off,
// off+out) of y (rows × cols).
func (l *LoRA) part(out int, y kernels.Buffer, cols, off int) kernels.LoRAPart {
	return kernels.LoRAPart{B: l.B, DB: l.DB, Rank: l.Rank, Out: out, Scale: l.Scale, Y: y, YCols: cols, YOff: off}
}

// project computes out = in·Wᵀ (+ bias) (+ LoRA) for n rows, the GEMM
// reading inBF16 (in's bf16 cast) instead of in when it is not nil. When
// xa is not nil it receives in·Aᵀ (n × rank) for the backward pass;
// otherwise a scratch buffer from a is used.
func (m *Model) project(a *arena, layer int, p Proj, out, in, inBF16, w, bias kernels.Buffer, n int, xa kernels.Buffer) {
	be := m.Backend
	inDim, outDim := m.Config.Dims(p)
	be.MatMul(out, gemmInput(in, inBF16), w, n, outDim, inDim, false, true, 1, 0)
	if bias != nil {
		be.AddBias(out, bias, n, outDim)
	}
	if l := m.lora(layer, p); l != nil {
		if xa == nil {
			xa = a.alloc(kernels.F32, n*l.Rank)
		}
		be.LoRAShrink(xa, in, l.A, n, inDim, l.Rank)
		be.LoRAExpand(xa, []kernels.LoRAPart{l.part(outDim, out, outDim, 0)}, n)
	}
}
