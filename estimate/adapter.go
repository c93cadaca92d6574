package estimate

import (
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// adapterShape is the adapter the estimate sizes: as model sizes its
// buffers by (m, a model.AdapterShape), or, for an adapter known only by
// its count of targets (grpo eval's), as that count per layer.
type adapterShape struct {
	// rank and perLayer (adapted dense projections of each layer) are an
	// adapter known only by its count of targets (byCount: uniformShape),
	// whose x·Aᵀ the sampling phase prices per layer.
	rank     int
	perLayer []int64
	byCount  bool
	// replay: the training forward replays the recorded routing
	// (loss.routing_replay on a mixture-of-experts model), and each
	// sparse layer of its trace keeps the top-k it recomputes beside the
	// replayed one, for the mismatch metric (model/moe.go useRouting): k
	// int32 per token. Not an adapter's, but every trace sizing that
	// takes the shape needs it, the KL reference's too (it replays).
	replay bool
	// attn is the dtype of a trace's queries and KV cache
	// (model.Config.TraceAttentionDType: bf16 for bf16 weights on a GPU);
	// like replay, the KL reference's trace's too.
	attn kernels.DType
	// m is the shape model sizes its buffers by.
	m model.AdapterShape
}

// shapeOf sizes an adapter of rank on projs for mc.
func shapeOf(mc *model.Config, rank int, projs []model.Proj, routers bool) adapterShape {
	return adapterShape{m: model.UniformAdapterShape(mc, rank, projs, routers)}
}

// uniformShape is an adapter known only by its count of targets, taken
// as dense projections of every layer (grpo eval's applied adapter).
func uniformShape(mc *model.Config, rank, targets int) adapterShape {
	s := adapterShape{rank: rank, perLayer: make([]int64, mc.NumLayers), byCount: true,
		m: model.UniformAdapterShape(mc, 0, nil, false)}
	for l := range s.perLayer {
		s.perLayer[l] = int64(targets)
	}
	return s
}

// noAdapter is the shape of no adapter (the KL reference's forward).
func noAdapter(mc *model.Config) adapterShape {
	return adapterShape{m: model.UniformAdapterShape(mc, 0, nil, false)}
}
