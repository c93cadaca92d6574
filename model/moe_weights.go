package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// MoEWeights are a sparse layer's router and experts. The experts'
// projections are stacked so that each is one grouped GEMM over all of
// them: GateUp is nExperts × (2·moe_intermediate) × hidden, expert e's
// [gate_proj; up_proj] at e·2·inter·hidden, and Down nExperts × hidden ×
// moe_intermediate. Experts[e] holds the views of expert e's matrices.
type MoEWeights struct {
	Router kernels.Buffer // mlp.gate: nExperts × hidden
	// RouterBias is GLM-4.5's mlp.gate.e_score_correction_bias (nExperts,
	// f32): added to the scores that choose experts, never to the
	// weights; nil for a softmax router.
	RouterBias kernels.Buffer
	// LogitBias is gpt-oss's mlp.router.bias (nExperts, f32), added to the
	// router's logits; GateUpBias (nExperts × 2·moe_intermediate, each
	// expert's gate then up, f32) and DownBias (nExperts × hidden, f32)
	// its experts' biases. nil elsewhere.
	LogitBias, GateUpBias, DownBias kernels.Buffer
	GateUp, Down                    kernels.Buffer
	// GateUpMX and DownMX are gpt-oss's MXFP4 experts kept MXFP4 on a
	// backend that keeps bf16 weights bf16 (cuda, emu), in GateUp's and
	// Down's layouts; GateUp, Down and the Experts' views are nil then.
	// nil elsewhere.
	GateUpMX, DownMX *kernels.MXFP4
	Experts          []Expert
	// Shared is Qwen3.5-MoE's shared expert, nil where there is none.
	Shared *SharedExpert
	// LatentIn (latent × hidden) and LatentOut (hidden × latent) are a
	// latent MoE's fc1_latent_proj and fc2_latent_proj (moe_latent.go);
	// nil elsewhere.
	LatentIn, LatentOut kernels.Buffer
}

// SharedExpert is a dense SwiGLU MLP every token goes through beside its
// routed experts, its output scaled by sigmoid(x·Gateᵀ) (HF
// Qwen3_5MoeSparseMoeBlock's shared_expert and shared_expert_gate), or
// added as it is where Scale is nil (GLM-4.5's shared_experts).
// GateUp is [gate_proj; up_proj] (2·inter × hidden), as Layer.GateUp.
type SharedExpert struct {
	GateUp, Gate, Up, Down kernels.Buffer
	Scale                  kernels.Buffer // shared_expert_gate: 1 × hidden
}

// Expert is the views of one expert's projections into MoEWeights.
type Expert struct{ Gate, Up, Down kernels.Buffer }

// expertSpecs appends a sparse layer's router and expert tensors (HF names
// mlp.gate.weight and mlp.experts.{e}.{gate,up,down}_proj.weight) to s,
// the experts as members of the two stacked groups: every expert, or an
// expert-parallel rank's (heldExperts), whose stacks hold theirs alone.
func (c *Config) expertSpecs(s []tensorSpec, l *Layer, prefix string, b moe) []tensorSpec {
	h, mi, ne := c.ExpertWidth(), c.MoEIntermediateSize, c.NumExperts // h: the experts' rows, latent or hidden
	first, held := c.heldExperts()
	mw := &MoEWeights{Experts: make([]Expert, held)}
	l.MoE = mw
	gateUp, down := &fusedSpec{dst: &mw.GateUp}, &fusedSpec{dst: &mw.Down}
	if b.expertBias {
		s = c.gptOssExpertSpecs(s, mw, gateUp, down, prefix)
	}
	member := func(g *fusedSpec, name string, shape []int, dst *kernels.Buffer) tensorSpec {
		sp := tensorSpec{name: name, shape: shape, dst: dst, fused: g, off: g.size}
		g.size += numel(shape)
		g.members = append(g.members, len(s))
		return sp
	}
	if c.relu2Experts() {
		// transformers' NemotronHExperts holds [experts, inter, hidden]
		// up_proj and [experts, hidden, inter] down_proj parameters; the
		// published checkpoints one tensor per expert.
		gateUp.whole, gateUp.wholeShape = prefix+"mlp.experts.up_proj", []int{ne, mi, h}
		down.whole, down.wholeShape = prefix+"mlp.experts.down_proj", []int{ne, h, mi}
	} else if c.Arch().Hybrid || c.Arch().SigmoidRouter {
		// Qwen3.5-MoE checkpoints may store each layer's experts as two
		// tensors, [experts, 2·inter, hidden] (gate then up per expert)
		// and [experts, hidden, inter]: exactly the stacked buffers.
		gateUp.whole, gateUp.wholeShape = prefix+"mlp.experts.gate_up_proj", []int{ne, 2 * mi, h}
		down.whole, down.wholeShape = prefix+"mlp.experts.down_proj", []int{ne, h, mi}
	}
	gateUp.wholeFrom, down.wholeFrom = first, first
	if b.routerBias {
		// gpt-oss's router is mlp.router, a Linear with a bias.
		s = append(s, tensorSpec{name: prefix + "mlp.router.weight", shape: []int{ne, c.HiddenSize}, dst: &mw.Router},
			tensorSpec{name: prefix + "mlp.router.bias", shape: []int{ne}, dst: &mw.LogitBias, f32: true})
	} else {
		s = append(s, tensorSpec{name: prefix + "mlp.gate.weight", shape: []int{ne, c.HiddenSize}, dst: &mw.Router})
	}
	if c.Arch().SigmoidRouter {
		// transformers keeps the bias in f32 (_keep_in_fp32_modules).
		s = append(s, tensorSpec{name: prefix + "mlp.gate.e_score_correction_bias", shape: []int{ne}, dst: &mw.RouterBias, f32: true})
	}
	s = c.latentSpecs(s, mw, prefix)
	for e := first; e < first+held; e++ {
		ex := &mw.Experts[e-first]
		p := fmt.Sprintf("%smlp.experts.%d.", prefix, e)
		if !c.relu2Experts() { // relu² experts have no gate: GateUp holds the ups
			s = append(s, member(gateUp, p+"gate_proj.weight", []int{mi, h}, &ex.Gate))
		}
		s = append(s, member(gateUp, p+"up_proj.weight", []int{mi, h}, &ex.Up))
	}
	for e := first; e < first+held; e++ {
		s = append(s, member(down, fmt.Sprintf("%smlp.experts.%d.down_proj.weight", prefix, e), []int{h, mi}, &mw.Experts[e-first].Down))
	}
	if si, h := c.SharedExpertIntermediateSize, c.HiddenSize; si > 0 { // the shared expert reads the hidden state
		sh := &SharedExpert{}
		mw.Shared = sh
		gu := &fusedSpec{dst: &sh.GateUp}
		p := prefix + c.sharedExpertModule() + "."
		if c.relu2Experts() {
			s = append(s, tensorSpec{name: p + "up_proj.weight", shape: []int{si, h}, dst: &sh.Up})
		} else {
			s = append(s, member(gu, p+"gate_proj.weight", []int{si, h}, &sh.Gate))
			s = append(s, member(gu, p+"up_proj.weight", []int{si, h}, &sh.Up))
		}
		s = append(s, tensorSpec{name: p + "down_proj.weight", shape: []int{h, si}, dst: &sh.Down})
		if !c.Arch().SigmoidRouter {
			s = append(s, tensorSpec{name: prefix + "mlp.shared_expert_gate.weight", shape: []int{1, h}, dst: &sh.Scale})
		}
	}
	return s
}

// ExpertDims returns an expert projection's (in, out) features: a latent
// MoE's experts read and write latent rows (ExpertWidth).
func (c *Config) ExpertDims(p Proj) (in, out int) {
	if p == ProjDown {
		return c.MoEIntermediateSize, c.ExpertWidth()
	}
	return c.ExpertWidth(), c.MoEIntermediateSize
}

// buffers are the MoE weights' own allocations (not the views).
func (w *MoEWeights) buffers() []*kernels.Buffer {
	b := []*kernels.Buffer{&w.Router, &w.GateUp, &w.Down}
	for _, p := range []*kernels.Buffer{&w.RouterBias, &w.LogitBias, &w.GateUpBias, &w.DownBias, &w.LatentIn, &w.LatentOut} {
		if *p != nil {
			b = append(b, p)
		}
	}
	if sh := w.Shared; sh != nil && sh.GateUp == nil { // relu²: up alone
		b = append(b, &sh.Up, &sh.Down)
	} else if sh != nil {
		b = append(b, &sh.GateUp, &sh.Down)
		if sh.Scale != nil {
			b = append(b, &sh.Scale)
		}
	}
	return b
}

// mxfp4Buffers are the MXFP4 experts' own allocations.
func (w *MoEWeights) mxfp4Buffers() []kernels.Buffer {
	var b []kernels.Buffer
	for _, x := range []*kernels.MXFP4{w.GateUpMX, w.DownMX} {
		if x != nil {
			b = append(b, x.Codes, x.Scales)
		}
	}
	return b
}

// mxfp4Parts are the MXFP4 experts' codes and scales, each stacking
// every expert's end to end (expert parallelism keeps a run of them).
func (w *MoEWeights) mxfp4Parts() []*kernels.Buffer {
	var b []*kernels.Buffer
	for _, x := range []*kernels.MXFP4{w.GateUpMX, w.DownMX} {
		if x != nil {
			b = append(b, &x.Codes, &x.Scales)
		}
	}
	return b
}

// gateUpGEMM and downGEMM are the experts' grouped GEMMs (GroupedMatMul's
// c, a, offsets and shapes, alpha 1, beta 0) over the dense or the MXFP4
// weights.
func (w *MoEWeights) gateUpGEMM(be kernels.Backend, c, a, offsets kernels.Buffer, rows, ne, n, k int, transB bool) {
	expertGEMM(be, c, a, w.GateUp, w.GateUpMX, offsets, rows, ne, n, k, transB)
}

func (w *MoEWeights) downGEMM(be kernels.Backend, c, a, offsets kernels.Buffer, rows, ne, n, k int, transB bool) {
	expertGEMM(be, c, a, w.Down, w.DownMX, offsets, rows, ne, n, k, transB)
}

func expertGEMM(be kernels.Backend, c, a, dense kernels.Buffer, mx *kernels.MXFP4, offsets kernels.Buffer, rows, ne, n, k int, transB bool) {
	if mx != nil {
		be.GroupedMatMulMXFP4(c, a, *mx, offsets, rows, ne, n, k, transB, 1, 0)
		return
	}
	be.GroupedMatMul(c, a, dense, offsets, rows, ne, n, k, transB, 1, 0)
}

// reslice sets the experts' views again after GateUp or Down was
// replaced (MXFP4 experts have none).
func (w *MoEWeights) reslice(c *Config) {
	h, mi := c.ExpertWidth(), c.MoEIntermediateSize
	if c.relu2Experts() {
		for e := range w.Experts {
			w.Experts[e] = Expert{Up: w.GateUp.Slice(e*mi*h, mi*h), Down: w.Down.Slice(e*h*mi, h*mi)}
		}
		return
	}
	for e := range w.Experts {
		if w.GateUpMX != nil {
			break
		}
		w.Experts[e] = Expert{
			Gate: w.GateUp.Slice(e*2*mi*h, mi*h),
			Up:   w.GateUp.Slice(e*2*mi*h+mi*h, mi*h),
			Down: w.Down.Slice(e*h*mi, h*mi),
		}
	}
	if sh := w.Shared; sh != nil {
		si, h := c.SharedExpertIntermediateSize, c.HiddenSize
		sh.Gate, sh.Up = sh.GateUp.Slice(0, si*h), sh.GateUp.Slice(si*h, si*h)
	}
}

// sharedExpertModule is the shared expert's module path in a layer:
// Qwen3.5-MoE's mlp.shared_expert, GLM-4.5's mlp.shared_experts.
func (c *Config) sharedExpertModule() string {
	if c.Arch().SigmoidRouter {
		return "mlp.shared_experts"
	}
	return "mlp.shared_expert"
}
