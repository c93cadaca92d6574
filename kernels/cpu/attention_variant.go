package cpu

import (
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// attnVariant is a kernels.AttentionVariant read on the host.
type attnVariant struct {
	window int
	sinks  []float32 // nil: none
}

// variantOf checks v for nHead query heads and reads its sinks.
func variantOf(op string, v kernels.AttentionVariant, nHead int) attnVariant {
	v.Check(op, nHead)
	av := attnVariant{window: v.Window}
	if v.Sinks != nil {
		av.sinks = floats(op, "sinks", v.Sinks, nHead)
	}
	return av
}

// first is the first position a query at pos attends to.
func (av attnVariant) first(pos int) int {
	if av.window > 0 {
		return max(0, pos-av.window+1)
	}
	return 0
}

// span is the positions L..P−1 a block of queries at positions pos reads:
// from its earliest first position to its last position.
func (av attnVariant) span(pos []int32) (L, P int) {
	L = math.MaxInt
	for _, p := range pos {
		L, P = min(L, av.first(int(p))), max(P, int(p)+1)
	}
	return L, P
}

// addSink joins a sink logit to a softmax row whose entries are
// e^{s_j − mx} summing to sum: when the sink exceeds mx the row is
// rescaled to the sink's maximum, and e^{sink − mx} joins the sum.
func addSink(row []float32, mx float32, sum float64, sink float32) (float32, float64) {
	if sink > mx {
		c := math.Exp(float64(mx - sink))
		for j := range row {
			row[j] = float32(float64(row[j]) * c)
		}
		sum *= c
		mx = sink
	}
	return mx, sum + math.Exp(float64(sink-mx))
}
