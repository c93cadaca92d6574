package loss

import (
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// idlePasses runs n idle passes (none when n ≤ 0).
func idlePasses(policy *model.Model, cfg Config, n int) error {
	for range n {
		if err := idlePass(policy, cfg); err != nil {
			return err
		}
	}
	return nil
}

// idlePass is a micro-batch's forward and backward over one token that
// carries no loss (its log-prob's gradient is 0): it adds exact zeros to
// the adapter's gradients, but makes every collective call a micro-batch
// makes — under expert parallelism each sparse layer's exchanges, in
// which this rank runs its experts on the other ranks' rows and adds
// their gradients — and, with the KL term, the reference forward's too.
func idlePass(policy *model.Model, cfg Config) error {
	var b model.Batch
	b.Add(0, 0, 0)
	rows, targets := []int32{0}, []int32{0}
	tr, err := policy.ForwardTrain(&b, rows, targets)
	if err != nil {
		return err
	}
	defer tr.Free()
	be := policy.Backend
	if cfg.Beta != 0 {
		ref, err := referenceLogp(policy, &b, rows, targets)
		if err != nil {
			return err
		}
		be.Free(ref)
	}
	zero := be.Alloc(kernels.F32, 1)
	defer be.Free(zero)
	return tr.Backward(zero)
}
