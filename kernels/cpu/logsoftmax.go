package cpu

import (
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// LogSoftmaxGather makes two passes per row (max, then Σe^(x−max) and
// Σe^(x−max)·x together) and accumulates in float64, so a 150k vocab loses
// nothing to summation error. Entropy is lse − E_p[x]. The C kernels take
// the exps in float32 (vec_kernels.h), the sums still in float64.
func (be *Backend) LogSoftmaxGather(logp, entropy, logits, target kernels.Buffer, rows, vocab int) {
	const op = "LogSoftmaxGather"
	positive(op, rows, vocab)
	xs := floats(op, "logits", logits, rows*vocab)
	ts := ints(op, "target", target, rows)
	index(op, "target", ts, vocab)
	lp := f32(op, "logp", logp, rows)
	var ent []float32
	if entropy != nil {
		ent = f32(op, "entropy", entropy, rows)
	}
	be.parallel(rows, 20*vocab, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := xs[r*vocab : (r+1)*vocab]
			if be.vec != nil {
				mx, z, zx := be.vec.lseStats(row)
				logZ := math.Log(z)
				lp[r] = float32(float64(row[ts[r]]-mx) - logZ)
				if ent != nil {
					ent[r] = float32(logZ - zx/z)
				}
				continue
			}
			mx := row[0]
			for _, v := range row {
				mx = max(mx, v)
			}
			z, zx := 0.0, 0.0
			for _, v := range row {
				d := float64(v - mx)
				e := expNonPos(d)
				z += e
				zx += e * d
			}
			logZ := math.Log(z)
			lp[r] = float32(float64(row[ts[r]]-mx) - logZ)
			if ent != nil {
				// H = lse − E[x] = log z − E[x − max]
				ent[r] = float32(logZ - zx/z)
			}
		}
	})
}
