package model

import (
	"fmt"
	"slices"

	"github.com/grpo-dev/grpo/kernels"
)

// Proj names a linear projection of a decoder layer, the unit LoRA adapts.
// Which exist in a layer depends on its blocks (Config.HasProj).
type Proj uint8

const (
	// Attention (self_attn.) and the dense MLP (mlp.).
	ProjQ Proj = iota
	ProjK
	ProjV
	ProjO
	ProjGate
	ProjUp
	ProjDown
	// A gated DeltaNet token mixer (linear_attn.).
	ProjInQKV
	ProjInZ
	ProjInB
	ProjInA
	ProjOut
	// A Qwen3.5-MoE layer's shared expert (mlp.shared_expert.) and its
	// one-output gate (mlp.shared_expert_gate).
	ProjSharedGate
	ProjSharedUp
	ProjSharedDown
	ProjSharedScale
	// A Mamba-2 mixer's in_proj (Nemotron-H's mixer.in_proj; its
	// out_proj is ProjOut).
	ProjMambaIn
	// A latent MoE's projections around its routed experts
	// (Nemotron-3-Super's mixer.fc1_latent_proj, hidden → latent, and
	// fc2_latent_proj, latent → hidden; moe_latent.go).
	ProjLatentIn
	ProjLatentOut
	NumProj
)

var projNames = [NumProj]string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
	"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj",
	"gate_proj", "up_proj", "down_proj", "shared_expert_gate", "in_proj", "fc1_latent_proj", "fc2_latent_proj"}

// String is the HF module name ("q_proj"), the last part of Module.
func (p Proj) String() string { return projNames[p] }

// Module is the path of the projection inside a layer ("self_attn.q_proj").
func (p Proj) Module() string {
	switch {
	case p <= ProjO:
		return "self_attn." + projNames[p]
	case p <= ProjDown:
		return "mlp." + projNames[p]
	case p <= ProjOut:
		return "linear_attn." + projNames[p]
	case p <= ProjSharedDown:
		return "mlp.shared_expert." + projNames[p]
	case p == ProjMambaIn:
		return "mixer." + projNames[p]
	}
	return "mlp." + projNames[p]
}

// ProjModule is p's module path in the config's layers: Module, but
// GLM-4.5 names its shared expert mlp.shared_experts.
func (c *Config) ProjModule(p Proj) string {
	if c.Arch().Nemotron {
		// Every block of a Nemotron-H layer is its mixer.
		if p >= ProjSharedGate && p <= ProjSharedDown {
			return "mixer.shared_experts." + projNames[p]
		}
		return "mixer." + projNames[p]
	}
	if p >= ProjSharedGate && p <= ProjSharedDown {
		return c.sharedExpertModule() + "." + projNames[p]
	}
	return p.Module()
}

// ParseProj maps a PEFT target module name ("q_proj") to a Proj; for the
// names a shared expert repeats (gate_proj, up_proj, down_proj) it is the
// MLP's (ProjsNamed lists both).
func ParseProj(name string) (Proj, error) {
	for i, n := range projNames {
		if n == name {
			return Proj(i), nil
		}
	}
	return 0, fmt.Errorf("unknown target module %q; valid: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out_proj, shared_expert_gate, in_proj, fc1_latent_proj, fc2_latent_proj (and gate, the routers of a mixture-of-experts model)", name)
}

// ProjsNamed lists every projection whose module name is name: one, or
// for gate_proj, up_proj and down_proj the MLP's and the shared expert's.
func ProjsNamed(name string) []Proj {
	var out []Proj
	for i, n := range projNames {
		if n == name {
			out = append(out, Proj(i))
		}
	}
	return out
}

// IsMLP reports whether p is one of the MLP's gate, up and down
// projections: in a sparse layer, every expert's.
func (p Proj) IsMLP() bool { return p >= ProjGate && p <= ProjDown }

// HasProjAnywhere reports whether some layer has projection p.
func (c *Config) HasProjAnywhere(p Proj) bool {
	for l := range c.NumLayers {
		if c.HasProj(l, p) {
			return true
		}
	}
	return false
}

// HasProj reports whether layer l has projection p: attention's in an
// attention layer, DeltaNet's in a linear-attention layer, the MLP's in
// every layer (a sparse layer's are its experts'), the shared expert's
// in a sparse layer of a model with one.
func (c *Config) HasProj(l int, p Proj) bool {
	d := c.decoderLayer(l)
	return slices.Contains(d.mixer.loraTargets(), p) || slices.Contains(d.channel.loraTargets(), p)
}

// Dims returns the projection's (in, out) features under cfg.
func (c *Config) Dims(p Proj) (in, out int) {
	h, q, kv := c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	si := c.SharedExpertIntermediateSize
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
	case ProjDown:
		return c.IntermediateSize, h
	case ProjInQKV:
		return h, c.LinearConvDim()
	case ProjInZ:
		return h, c.LinearValueDim()
	case ProjInB, ProjInA:
		return h, c.LinearNumValueHeads
	case ProjOut:
		if c.Arch().Nemotron {
			return c.MambaDim(), h
		}
		return c.LinearValueDim(), h
	case ProjMambaIn:
		return h, c.MambaInProjDim()
	case ProjLatentIn:
		return h, c.MoELatent()
	case ProjLatentOut:
		return c.MoELatent(), h
	case ProjSharedGate, ProjSharedUp:
		return h, si
	case ProjSharedDown:
		return si, h
	default: // ProjSharedScale
		return h, 1
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
// and the LoRA shrink reading inBF16 (in's bf16 cast) instead of in when
// it is not nil. When xa is not nil it receives in·Aᵀ (n × rank) for the
// backward pass; otherwise a scratch buffer from a is used.
func (m *Model) project(a *arena, layer int, p Proj, out, in, inBF16, w, bias kernels.Buffer, n int, xa kernels.Buffer) {
	be := m.Backend
	inDim, outDim := m.Config.Dims(p)
	x := gemmInput(in, inBF16)
	be.MatMul(out, x, w, n, outDim, inDim, false, true, 1, 0)
	if bias != nil {
		be.AddBias(out, bias, n, outDim)
	}
	if l := m.lora(layer, p); l != nil {
		if xa == nil {
			xa = a.alloc(kernels.F32, n*l.Rank)
		}
		be.LoRAShrink(xa, x, l.A, n, inDim, l.Rank)
		be.LoRAExpand(xa, []kernels.LoRAPart{l.part(outDim, out, outDim, 0)}, n)
	}
}

// loraInto adds layer's LoRA of p applied to in (n × p's in) into columns
// [off, off+out) of y (n × cols): the adapter of one member of a fused
// projection that is not a group (a shared expert's gate/up). xa, when
// not nil, receives in·Aᵀ for the backward.
func (m *Model) loraInto(a *arena, layer int, p Proj, y kernels.Buffer, cols, off int, in kernels.Buffer, n int, xa kernels.Buffer) {
	lr := m.lora(layer, p)
	if lr == nil {
		return
	}
	inDim, outDim := m.Config.Dims(p)
	if xa == nil {
		xa = a.alloc(kernels.F32, n*lr.Rank)
	}
	m.Backend.LoRAShrink(xa, in, lr.A, n, inDim, lr.Rank)
	m.Backend.LoRAExpand(xa, []kernels.LoRAPart{lr.part(outDim, y, cols, off)}, n)
}

// loraIntoBackward is loraInto's backward: dy's columns [off, off+out)
// (n × cols) are p's output gradient; Scale·(dy·B)·A is added into dx
// (skipped when nil) and the adapter's gradients into DA and DB. dxa (n ×
// rank) receives dy·B.
func (m *Model) loraIntoBackward(layer int, p Proj, dx, dy kernels.Buffer, cols, off int, x kernels.Buffer, n int, xa, dxa kernels.Buffer) {
	lr := m.lora(layer, p)
	if lr == nil {
		return
	}
	inDim, outDim := m.Config.Dims(p)
	m.Backend.LoRAExpandBackward(dxa, xa, []kernels.LoRAPart{lr.part(outDim, dy, cols, off)}, n)
	m.Backend.LoRAShrinkBackward(dx, lr.DA, dxa, x, lr.A, n, inDim, lr.Rank)
}
