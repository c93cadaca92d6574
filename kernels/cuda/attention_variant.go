package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// attnVariant is a checked kernels.AttentionVariant as the kernels take
// it: the window (0: none) and the sinks' buffer (a null pointer when
// there are none).
type attnVariant struct {
	window int32
	sinks  *buffer
}

// variantOf checks v for nHead query heads.
func (b *Backend) variantOf(op string, v kernels.AttentionVariant, nHead int) attnVariant {
	v.Check(op, nHead)
	if v.Window > 1<<30 {
		panic(fmt.Sprintf("cuda: %s: sliding window %d exceeds the kernels' int32 positions", op, v.Window))
	}
	return attnVariant{window: int32(v.Window), sinks: b.optBuf(op, "sinks", v.Sinks, nHead)}
}

// span is the most keys one query reads out of a cache of maxLen
// positions: the window, when it is smaller.
func (v attnVariant) span(maxLen int) int {
	if v.window > 0 {
		return min(maxLen, int(v.window))
	}
	return maxLen
}
