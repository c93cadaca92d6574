package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// groupedGatedRMSNormCases: one group (the whole row), groups of 8 and
// of 1000 columns, Nemotron-3-Nano-like rows (4096 in 8 groups, bf16 w),
// out aliasing x; each backward against the reference and finite
// differences. Tolerance tolReduction, as GatedRMSNorm's.
func groupedGatedRMSNormCases() []Case {
	return groupedGatedRMSNorm().cases([]gatedNormShape{{1, 1, 1, kernels.F32, false}, {5, 24, 3, kernels.F32, true}, {3, 2000, 2, kernels.F32, false}, {4, 4096, 8, kernels.BF16, false}})
}

// groupedGatedRMSNorm is SSMOps.GroupedGatedRMSNorm as a gatedNorm.
func groupedGatedRMSNorm() gatedNorm {
	const eps = 1e-5
	return gatedNorm{
		op: "GroupedGatedRMSNorm", seed: 6800,
		name: func(s gatedNormShape) string {
			return fmt.Sprintf("rows=%d,dim=%d,groups=%d,w=%v,alias=%v", s.rows, s.dim, s.groups, s.w, s.alias)
		},
		forward: func(b kernels.Backend, out, rstd, x, z, w kernels.Buffer, s gatedNormShape) {
			b.GroupedGatedRMSNorm(out, rstd, x, z, w, s.rows, s.dim, s.groups, eps)
		},
		backward: func(b kernels.Backend, dx, dz, dy, x, z, w, rstd kernels.Buffer, s gatedNormShape) {
			b.GroupedGatedRMSNormBackward(dx, dz, dy, x, z, w, rstd, s.rows, s.dim, s.groups)
		},
		ref: func(x, z, w []float64, s gatedNormShape) ([]float64, []float64) {
			return RefGroupedGatedRMSNorm(x, z, w, s.rows, s.dim, s.groups, eps)
		},
		refBack: func(dy, x, z, w, rstd []float64, s gatedNormShape) ([]float64, []float64) {
			return RefGroupedGatedRMSNormBackward(dy, x, z, w, rstd, s.rows, s.dim, s.groups)
		},
	}
}
