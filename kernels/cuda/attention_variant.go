package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// unsupportedVariant panics, naming op, on a variant the CUDA kernels do
// not take yet (sliding windows and sinks land in the .cu kernels next).
func unsupportedVariant(op string, v kernels.AttentionVariant, nHead int) {
	v.Check(op, nHead)
	if v != (kernels.AttentionVariant{}) {
		panic(fmt.Sprintf("cuda: %s: sliding windows and sinks are not in the CUDA kernels yet", op))
	}
}
