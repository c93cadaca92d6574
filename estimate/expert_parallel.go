package estimate

import (
	"fmt"
	"github.com/grpo-dev/grpo/kernels"

	"github.com/grpo-dev/grpo/model"
)

// expertShard is what one device of an expert-parallel group holds of a
// mixture-of-experts model: the routed experts of every sparse layer are
// split over the group's ep devices (rank k holds experts
// [k·E/ep, (k+1)·E/ep), at most per of them), while attention, DeltaNet, dense MLPs,
// embeddings, the head, the routers and the shared experts stay whole on
// every device. A routed expert's adapter and its AdamW moments live with
// the expert.
type expertShard struct {
	ep, per int   // devices of the group; the most routed experts per sparse layer one device holds
	total   int   // routed experts per sparse layer
	hidden  int64 // the width of the rows sent: a latent MoE's latent size
	topK    int64
	// rowDT is the dtype the rows travel and land in, in the training
	// trace and a prefill: bf16 when the trace in attn keeps bf16 between
	// every layer's ops, sparse layers included (model's moe.bf16Acts,
	// exchangeSpecs); the static decode step's stay f32.
	rowDT kernels.DType
}

// newExpertShard is the shard of mc over ep devices for a trace whose
// attention is in attn (TraceAttentionDType); ep ≤ 1, or a model without
// routed experts, keeps everything on every device.
func newExpertShard(mc *model.Config, ep int, attn kernels.DType) expertShard {
	if ep <= 1 || mc.SparseLayers() == 0 {
		return expertShard{ep: 1, per: mc.NumExperts, total: mc.NumExperts}
	}
	dt := kernels.F32
	if mc.BF16Layers(attn) == mc.NumLayers {
		dt = kernels.BF16
	}
	return expertShard{ep: ep, per: (mc.NumExperts + ep - 1) / ep, total: mc.NumExperts,
		hidden: int64(mc.ExpertWidth()), topK: int64(mc.NumExpertsPerTok), rowDT: dt}
}

func (s expertShard) split() bool { return s.ep > 1 }

// held is the part of n, a count spread evenly over every routed expert,
// that one device holds.
func (s expertShard) held(n int64) int64 {
	if !s.split() || s.total == 0 {
		return n
	}
	return n / int64(s.total) * int64(s.per)
}

// routedExpertParams is the parameters of mc's routed experts, every
// sparse layer's (not the routers, not the shared experts): what the
// whole model holds beyond what one token uses is (experts − top-k) of
// them per sparse layer (model.Config's ParamCount and
// ActiveParamCount), so one expert of every layer is that difference
// over experts − top-k.
func routedExpertParams(mc *model.Config) int64 {
	n, k := int64(mc.NumExperts), int64(mc.NumExpertsPerTok)
	if mc.SparseLayers() == 0 || n <= k {
		return 0
	}
	return (mc.ParamCount() - mc.ActiveParamCount()) / (n - k) * n
}

// expertLoRAParams is the adapter parameters of the routed experts (A
// and B of each adapted expert projection, every expert of every sparse
// layer), as ad sizes them.
func expertLoRAParams(mc *model.Config, ad model.AdapterShape) int64 {
	var n int64
	for l := range ad.Experts {
		for p, r := range ad.Experts[l] {
			if r > 0 {
				in, out := mc.ExpertDims(model.Proj(p))
				n += int64(mc.NumExperts) * int64(r) * int64(in+out)
			}
		}
	}
	return n
}

// a2aBytes is one sparse layer's all-to-all buffers for a forward (or
// backward) of n tokens on one device of the group: the dispatch sends
// each token's top-k rows to the devices of their experts and the combine
// sends the experts' outputs back. The permuted rows the MoE block
// gathers anyway are the dispatch's send buffer and the expert outputs
// the combine's; each exchange adds a receive buffer of n × top-k rows
// of hidden elements in rowDT (a latent MoE sends latent rows,
// fc1_latent_proj applied before the dispatch and fc2_latent_proj after
// the combine) when the routing is balanced, and the per-peer counts
// (int32, sent and received). The layers run one at a time, so one
// layer's set is alive.
func (s expertShard) a2aBytes(n int64) int64 { return s.a2aBytesIn(n, s.rowDT) }

// decodeA2ABytes is a2aBytes for the static decode step, whose rows are
// f32 (model.Decoder keeps f32 between ops).
func (s expertShard) decodeA2ABytes(n int64) int64 { return s.a2aBytesIn(n, kernels.F32) }

func (s expertShard) a2aBytesIn(n int64, dt kernels.DType) int64 {
	if !s.split() {
		return 0
	}
	return 2*n*s.topK*s.hidden*int64(dt.Size()) + 2*int64(s.ep)*4
}

func (s expertShard) a2aDetail(n int64) string {
	return fmt.Sprintf("dispatch and combine receive buffers: %d tokens × top-%d × %d wide rows × %d B (%v) each, one sparse layer at a time, routing taken as balanced over the %d devices",
		n, s.topK, s.hidden, s.rowDT.Size(), s.rowDT, s.ep)
}

// receivedBytes is the rows one sparse layer's experts receive for a
// micro-batch of n tokens on one device of the group, balanced: n ×
// top-k rows of hidden (a latent MoE: latent) in rowDT. The trace keeps them, the experts' input, for
// the backward (model/moe_ep_exchange.go); one device gathers its rows
// again instead, but on a rank they came from the other ranks.
func (s expertShard) receivedBytes(n int64) int64 {
	return n * s.topK * s.hidden * int64(s.rowDT.Size())
}

// keptLayers is the sparse layers whose exchange the trace keeps under
// pl: those not checkpointed (a checkpointed layer's rerun exchanges
// again). 0 without expert parallelism.
func (s expertShard) keptLayers(mc *model.Config, pl plan) int {
	if !s.split() {
		return 0
	}
	n := 0
	for l := range mc.NumLayers - pl.layers {
		if mc.IsSparse(l) {
			n++
		}
	}
	return n
}

func (s expertShard) receivedDetail(n int64, layers int) string {
	return fmt.Sprintf("%d sparse layers kept × %d tokens × top-%d × %d wide rows × %d B (%v): each layer's experts' input rows from the other devices, kept for the backward, routing taken as balanced",
		layers, n, s.topK, s.hidden, s.rowDT.Size(), s.rowDT)
}

// weightItems adds the base weights: all of them, or, split over an
// expert-parallel group, the replicated part and this device's routed
// experts.
func (e *Estimate) weightItems(mc *model.Config, stored fmt.Stringer) {
	wb := int64(e.WeightBytes)
	// A backend that keeps bf16 weights bf16 keeps MXFP4 experts MXFP4
	// (model/load_gptoss.go), 4.25 bits an element; the CPU dequantizes.
	var mx int64
	if stored == kernels.BF16 {
		mx = mc.MXFP4ExpertParams()
	}
	if !e.ep.split() {
		if mx > 0 {
			e.add(PhaseResident, "MXFP4 experts", kernels.MXFP4Bytes(mx),
				fmt.Sprintf("%s params × 4.25 bits (e2m1 codes + a scale byte per 32), decoded inside the grouped GEMM", count(mx)))
		}
		e.add(PhaseResident, "base weights", (e.BaseParams-mx)*wb,
			fmt.Sprintf("%s params × %d B (%s)", count(e.BaseParams-mx), e.WeightBytes, stored))
		return
	}
	routed := routedExpertParams(mc)
	e.add(PhaseResident, "base weights", (e.BaseParams-routed)*wb,
		fmt.Sprintf("%s params × %d B (%s) on every device: attention, dense MLPs, embeddings, head, routers, shared experts", count(e.BaseParams-routed), e.WeightBytes, stored))
	held := e.ep.held(routed)
	e.note("expert parallel over %d devices: each holds %d of the %d routed experts of every sparse layer and their adapters; every device samples and trains its own groups and sends its tokens' rows to their experts' devices and back (all-to-all), taken as balanced: a skewed step receives more rows",
		e.ep.ep, e.ep.per, e.ep.total)
	heldMX := e.ep.held(mx)
	detail := fmt.Sprintf("%d of %d experts of each of %d sparse layers (expert parallel over %d devices): %s of %s params × %d B",
		e.ep.per, e.ep.total, mc.SparseLayers(), e.ep.ep, count(held), count(routed), e.WeightBytes)
	if heldMX > 0 {
		// MXFP4 weights are ≈ 0.53 B a param, not the bf16 biases' 2.
		detail = fmt.Sprintf("%d of %d experts of each of %d sparse layers (expert parallel over %d devices): %s of %s params, %s MXFP4 × 4.25 bits (e2m1 codes + a scale byte per 32), %s (biases) × %d B",
			e.ep.per, e.ep.total, mc.SparseLayers(), e.ep.ep, count(held), count(routed), count(heldMX), count(held-heldMX), e.WeightBytes)
	}
	e.add(PhaseResident, "routed experts", kernels.MXFP4Bytes(heldMX)+(held-heldMX)*wb, detail)
}
