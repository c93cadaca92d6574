package model

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/kernels"
)

// Layer holds one decoder layer's frozen weights. Linear weights are
// [out, in] as in HF; optional tensors are nil when the architecture has
// none.
type Layer struct {
	InputNorm, PostAttnNorm kernels.Buffer
	Q, K, V, O              kernels.Buffer
	QBias, KBias, VBias     kernels.Buffer
	OBias                   kernels.Buffer
	QNorm, KNorm            kernels.Buffer
	// Sinks is the attention sinks' logits, one per query head, f32
	// (AttentionVariantConfig.AttentionSinks); nil without.
	Sinks          kernels.Buffer
	Gate, Up, Down kernels.Buffer
	// QKV is [q_proj; k_proj; v_proj] ((q + 2·kv) × hidden) and GateUp
	// [gate_proj; up_proj] (2·inter × hidden), each one buffer of which Q,
	// K, V and Gate, Up are views: projections that read one input run as
	// one GEMM, and code that wants one projection (merge, tests) keeps
	// its own name for it. Loading writes straight into them, so there is
	// one copy of each weight.
	QKV, GateUp kernels.Buffer
	// MoE is the mixture-of-experts MLP of a sparse layer (Gate, Up, Down
	// and GateUp are nil then); nil in dense layers.
	MoE *MoEWeights
	// Linear is the gated DeltaNet token mixer of a linear-attention
	// layer (the attention weights are nil then); nil in attention layers.
	Linear *DeltaNetWeights
	// Mamba is the Mamba-2 token mixer of a Nemotron-H M layer; nil in
	// other layers.
	Mamba *MambaWeights
	// blocks is the layer's composition, whose weights these are.
	blocks decoderLayer
}

// Weights are a model's frozen base parameters on a Backend.
type Weights struct {
	Embed  kernels.Buffer // vocab × hidden
	Norm   kernels.Buffer // hidden
	LMHead kernels.Buffer // vocab × hidden; the same buffer as Embed when tied
	Layers []Layer
}

// tensorSpec names one weight tensor, its expected shape and where it goes:
// its own buffer in *dst, or, for a member of a fused group, a view of
// *fused at element off (set in *dst too).
type tensorSpec struct {
	name  string
	shape []int
	dst   *kernels.Buffer
	fused *fusedSpec
	off   int
	// plusOne marks a zero-centred norm weight (Arch.ZeroCentredNorm):
	// Load stores 1 + w in f32, the scale transformers computes in f32,
	// so the norm kernels stay the plain RMSNorm.
	plusOne bool
	// f32 keeps the tensor in f32 whatever the checkpoint's dtype (the
	// router's correction bias, which the routing kernels read as f32).
	f32 bool
	// interleaved marks gpt-oss's gate_up_proj_bias, whose rows pair gate
	// and up values; Load stores each row's gates then its ups.
	interleaved bool
	// held, when n > 0, is the run of the tensor's rows (its first
	// dimension: experts) the buffer holds, an expert-parallel rank's
	// experts' of gpt-oss's biases stacking every expert's.
	held struct{ first, n int }
}

// fusedSpec is a buffer holding several projections' weights end to end.
type fusedSpec struct {
	dst  *kernels.Buffer
	size int // elements
	// members are the specs' indices, to find the group's dtype.
	members []int
	// whole, when not "", is a tensor holding the entire group that a
	// checkpoint may store instead of the members (Qwen3.5-MoE's
	// mlp.experts.gate_up_proj), of shape wholeShape.
	whole      string
	wholeShape []int
	// wholeFrom is the first of the whole tensor's experts the group
	// holds (an expert-parallel rank's, heldExperts): it holds the
	// group's size from there.
	wholeFrom int
	// packed, when not nil, is how gpt-oss stores the whole group
	// (load_gptoss.go), which Load converts.
	packed *packedExperts
}

// specs lists every tensor the config requires, with HF names and shapes.
func (c *Config) specs(w *Weights) []tensorSpec {
	h, v := c.HiddenSize, c.VocabSize
	norm := c.Arch().ZeroCentredNorm
	root := c.TensorPrefix()
	w.Layers = make([]Layer, c.NumLayers)
	s := []tensorSpec{{name: root + "embed_tokens.weight", shape: []int{v, h}, dst: &w.Embed}}
	for i, d := range c.decoderLayers() {
		l := &w.Layers[i]
		l.blocks = d
		p := fmt.Sprintf("%slayers.%d.", root, i)
		// A layer of one block has its one norm (layerForward).
		if d.hasMixer() {
			s = append(s, tensorSpec{name: p + "input_layernorm.weight", shape: []int{h}, dst: &l.InputNorm, plusOne: norm})
		}
		var tail []tensorSpec
		s, tail = d.mixer.weightSpecs(c, s, l, p)
		if d.hasChannel() {
			s = append(s, tensorSpec{name: p + "post_attention_layernorm.weight", shape: []int{h}, dst: &l.PostAttnNorm, plusOne: norm})
		}
		s = d.channel.weightSpecs(c, s, l, p)
		// The token mixer's tail (attention's biases and q/k norms) comes
		// after the channel mixer's tensors: the order NewRandom draws
		// from its one stream, which tests' goldens depend on.
		s = append(s, tail...)
	}
	s = append(s, tensorSpec{name: root + "norm.weight", shape: []int{h}, dst: &w.Norm, plusOne: norm})
	if !c.TieWordEmbeddings {
		s = append(s, tensorSpec{name: "lm_head.weight", shape: []int{v, h}, dst: &w.LMHead})
	}
	if c.Arch().Nemotron {
		renameNemotron(s, root)
	}
	return s
}

// TensorPrefix is where the checkpoint keeps the text model's tensors:
// "model." or, for a model whose checkpoint also holds a vision tower,
// "model.language_model.".
func (c *Config) TensorPrefix() string {
	if c.Arch().Nemotron {
		return cmp.Or(c.nemotronRoot, "backbone.")
	}
	if c.Arch().Nested {
		return "model.language_model."
	}
	return "model."
}

// place returns the buffer a spec's tensor goes into: a new one of dt, or
// its view of the fused group's buffer, allocated on first use with
// groupDT (the group's weights share one dtype).
func (sp tensorSpec) place(be kernels.Backend, dt kernels.DType, groupDT func(*fusedSpec) kernels.DType) kernels.Buffer {
	n := numel(sp.shape)
	if sp.held.n > 0 {
		n = sp.held.n * numel(sp.shape[1:])
	}
	if sp.fused == nil {
		return be.Alloc(dt, n)
	}
	if *sp.fused.dst == nil {
		*sp.fused.dst = be.Alloc(groupDT(sp.fused), sp.fused.size)
	}
	return (*sp.fused.dst).Slice(sp.off, n)
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func shapeEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// renameNemotron gives specs built with the Llama-style names the names
// of a Nemotron-H checkpoint under root (backbone. in the published
// ones, model. in transformers' current class): every block is the
// layer's mixer, its one norm is norm, the embedding embeddings and the
// final norm norm_f. The published checkpoints and transformers'
// NemotronHForCausalLM agree on these below the root.
func renameNemotron(s []tensorSpec, root string) {
	rename := func(name string) string {
		rest, ok := strings.CutPrefix(name, root)
		if !ok {
			return name // lm_head
		}
		switch rest {
		case "embed_tokens.weight":
			return root + "embeddings.weight"
		case "norm.weight":
			return root + "norm_f.weight"
		}
		for _, r := range [][2]string{{".self_attn.", ".mixer."}, {".mlp.", ".mixer."}, {".input_layernorm.", ".norm."},
			{".post_attention_layernorm.", ".norm."}} {
			rest = strings.Replace(rest, r[0], r[1], 1)
		}
		return root + rest
	}
	renamed := map[*fusedSpec]bool{}
	for i := range s {
		s[i].name = rename(s[i].name)
		if g := s[i].fused; g != nil && g.whole != "" && !renamed[g] {
			g.whole = rename(g.whole)
			renamed[g] = true
		}
	}
}
