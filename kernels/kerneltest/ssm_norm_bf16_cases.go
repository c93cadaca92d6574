package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The grouped gated norm over BF16 activations (a bf16 model's Mamba-2
// layer): GroupedGatedRMSNorm with every F32/BF16 combination of out, x
// and z but the all-F32 one (and out aliasing x where both are BF16),
// its backward with every combination of dx, dz, dy, x and z; rstd stays
// F32. Each on 5 rows of 24 in 3 groups (f32 w) and Nemotron-3-Nano-like
// rows of 4096 in 8 groups (bf16 w). A BF16 output must be a bf16 value,
// the rounding of one within tolReduction (CompareStored).

// groupedNormBF16Shapes are the shapes of the bf16 cases.
var groupedNormBF16Shapes = []gatedNormShape{{5, 24, 3, kernels.F32, false}, {4, 4096, 8, kernels.BF16, false}}

func groupedGatedRMSNormBF16Cases() []Case {
	var cs []Case
	g := groupedGatedRMSNorm()
	for mask := 1; mask < 8; mask++ {
		for j, s := range groupedNormBF16Shapes {
			for _, alias := range []bool{false, true} {
				if alias && mask&3 != 3 {
					continue
				}
				cs = append(cs, g.bf16Forward(s, dtypesOf(mask, 3), alias, uint64(7200+4*mask+2*j), groupedNormBF16Name(s)))
			}
		}
	}
	return cs
}

func groupedGatedRMSNormBackwardBF16Cases() []Case {
	var cs []Case
	g := groupedGatedRMSNorm()
	for mask := 1; mask < 32; mask++ {
		for j, s := range groupedNormBF16Shapes {
			cs = append(cs, g.bf16Backward(s, dtypesOf(mask, 5), uint64(7400+2*mask+j), groupedNormBF16Name(s)))
		}
	}
	return cs
}

func groupedNormBF16Name(s gatedNormShape) string {
	return fmt.Sprintf("rows=%d,dim=%d,groups=%d,w=%v", s.rows, s.dim, s.groups, s.w)
}
