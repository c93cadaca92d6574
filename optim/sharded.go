package optim

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// shards marks the parameters this rank alone holds in a group whose
// ranks split them (expert parallelism's experts): their squared
// gradients are summed over the group's ranks before the norm is taken.
type shards struct {
	coll  kernels.Collective
	local []bool // by parameter
}

// ShardAcross makes the gradient norm, hence the clipping, global over
// coll's ranks when each rank holds some parameters alone: local[i] marks
// the i-th parameter as this rank's only. The other parameters' gradients
// are the same on every rank (summed already, as data parallelism's are).
// Update then sums the local parameters' squares over the ranks, one
// all-reduce of one value, and adds the others' once: every rank clips by
// the norm one device holding every parameter would take.
func (o *AdamW) ShardAcross(coll kernels.Collective, local []bool) error {
	if len(local) != len(o.params) {
		return fmt.Errorf("optimizer: %d shard marks for %d parameters", len(local), len(o.params))
	}
	o.shards = &shards{coll: coll, local: local}
	return nil
}

// splitSquares sums sq, the parameters' squared gradients, in float64:
// those every rank holds alike once, this rank's own summed over the
// ranks.
func (o *AdamW) splitSquares(sq []float32) (float64, error) {
	var shared, own float64
	for i, v := range sq {
		if o.shards != nil && o.shards.local[i] {
			own += float64(v)
		} else {
			shared += float64(v)
		}
	}
	if o.shards == nil {
		return shared, nil
	}
	buf := o.be.Alloc(kernels.F32, 1)
	defer o.be.Free(buf)
	o.be.Upload(buf, []float32{float32(own)})
	if err := o.shards.coll.AllReduceSum(buf); err != nil {
		return 0, fmt.Errorf("optimizer: the gradient norm over the ranks: %w", err)
	}
	all := make([]float32, 1)
	o.be.Download(all, buf)
	return shared + float64(all[0]), o.be.Sync()
}
