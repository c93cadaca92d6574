package estimate

import "github.com/grpo-dev/grpo/model"

// The adapter as the estimate sizes it, and the sampling phase's
// mixture-of-experts set. The training phase's sizes are model's own
// (model.Config.TrainingLayerBytes and the others of
// model/train_sizes.go, for the adapter's model.AdapterShape); the
// sampling phase's are still worked out here (samplingBytes). In a sparse
// layer a token is n·k permuted rows (k = num_experts_per_tok) through
// the experts.

// adapterShape is what an adapter adds per token to the activations: as
// model sizes its buffers (m), and for the sampling phase's formulas rank
// columns of x·Aᵀ for each dense projection it adapts, per layer, and for
// each expert projection (gate/up/down adapted on every expert of the
// sparse layers), per permuted row.
type adapterShape struct {
	rank     int
	perLayer []int64 // adapted dense projections of each layer
	// expertProjs is the number of distinct expert projections adapted
	// (the inference set keeps one x·Aᵀ per projection for all layers).
	expertProjs int64
	// routers: the sparse layers' routers are adapted (rank columns of
	// h·Aᵀ per token).
	routers bool
	// replay: the training forward replays the recorded routing
	// (loss.routing_replay on a mixture-of-experts model), and each
	// sparse layer of its trace keeps the top-k it recomputes beside the
	// replayed one, for the mismatch metric (model/moe.go useRouting): k
	// int32 per token. Not an adapter's, but every trace sizing that
	// takes the shape needs it, the KL reference's too (it replays).
	replay bool
	// m is the shape model sizes its buffers by (the training phase).
	m model.AdapterShape
}

// routerRank is the router adapter's x·Aᵀ columns per token (0 for none).
func (s adapterShape) routerRank() int64 {
	if s.routers {
		return int64(s.rank)
	}
	return 0
}

// shapeOf sizes an adapter of rank on projs for mc.
func shapeOf(mc *model.Config, rank int, projs []model.Proj, routers bool) adapterShape {
	s := adapterShape{rank: rank, perLayer: make([]int64, mc.NumLayers),
		routers: routers && mc.SparseLayers() > 0, m: model.UniformAdapterShape(mc, rank, projs, routers)}
	for l := range mc.NumLayers {
		for _, p := range projs {
			if !mc.HasProj(l, p) {
				continue
			}
			if !mc.IsSparse(l) || !p.IsMLP() {
				s.perLayer[l]++
			}
		}
	}
	if mc.SparseLayers() > 0 {
		for _, p := range projs {
			if p.IsMLP() {
				s.expertProjs++
			}
		}
	}
	return s
}

// uniformShape is an adapter known only by its count of targets, taken
// as dense projections of every layer (grpo eval's applied adapter).
func uniformShape(mc *model.Config, rank, targets int) adapterShape {
	s := adapterShape{rank: rank, perLayer: make([]int64, mc.NumLayers)}
	for l := range s.perLayer {
		s.perLayer[l] = int64(targets)
	}
	return s
}

func moeDims(mc *model.Config) (k, experts, mi int64) {
	return int64(mc.NumExpertsPerTok), int64(mc.NumExperts), int64(mc.MoEIntermediateSize)
}

// moeInferenceBytes is the inference set of model/moe.go newMoEActs for
// a forward of n tokens, shared by the sparse layers, plus each sparse
// layer's experts buffer (model/moe_routing.go newRouting): per token
// router logits (experts) and weights (k); per permuted row tokens, rows
// and the set's own experts (3 int32), the gathered input and the expert
// output (2h), gate and up (2·moe_inter; SwiGLU writes gate), the gate/up
// GEMM's output (2·moe_inter) and the x·Aᵀ of each adapted expert
// projection (rank); offsets (experts + 1); and k int32 per token per
// sparse layer.
func moeInferenceBytes(mc *model.Config, n int64, ad adapterShape) int64 {
	if mc.SparseLayers() == 0 {
		return 0
	}
	k, ne, mi := moeDims(mc)
	h := int64(mc.HiddenSize)
	rows := n * k
	return (n*(ne+k+ad.routerRank()+int64(mc.SharedExpertActWidth())) + rows*(3+2*h+4*mi+ad.expertProjs*int64(ad.rank)) + ne + 1 +
		int64(mc.SparseLayers())*rows) * f32Bytes
}

// noAdapter is the shape of no adapter (the KL reference's forward).
func noAdapter(mc *model.Config) adapterShape {
	return adapterShape{perLayer: make([]int64, mc.NumLayers),
		m: model.UniformAdapterShape(mc, 0, nil, false)}
}
