package trainer

import (
	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/kernels"
)

// planKVPool sizes the sampler's KV pool for the run's rollouts from the
// device's free memory, as grpo estimate plans it (estimate.KVPlan): 0
// (every rollout's worst case at once) unless that does not fit, and
// then the blocks that do, the rest of a step's rollouts waiting for
// blocks (rollout.Options.KVBlocks). It runs after the model, adapter and
// optimizer are loaded, so the free memory already excludes them: the
// estimate's resident items are added back before it is asked. Unknown
// free memory leaves the pool unbounded, as before; rollouts on an
// inference server ([inference]) have no local pool to plan.
func (r *run) planKVPool() {
	if r.cfg.Inference.On() {
		return
	}
	free, ok := r.freeMemory()
	if !ok {
		return
	}
	e, err := estimate.Memory(r.cfg, r.base.Config, estimate.Options{Device: r.cfg.Device})
	if err != nil {
		return
	}
	av := estimate.Available{Bytes: free + e.PhaseBytes(estimate.PhaseResident), Known: true}
	if e, err = estimate.Memory(r.cfg, r.base.Config, estimate.Options{Device: r.cfg.Device, Available: &av}); err != nil {
		return
	}
	for _, p := range e.KV {
		if p.Phase == estimate.PhaseSampling && p.Bounded && p.Cap > 0 {
			r.kvBlocks = p.Blocks
			r.notes = append(r.notes, "KV cache: "+p.Summary())
		}
	}
}

// freeMemory is the device's free memory now: the backend's own report on
// a GPU, the host's MemAvailable otherwise.
func (r *run) freeMemory() (int64, bool) {
	if mr, ok := r.be.(kernels.MemoryReporter); ok && r.be.Describe().GPU {
		free, _, err := mr.MemInfo()
		return free, err == nil
	}
	av, err := estimate.AvailableMemory(r.cfg.Device)
	return av.Bytes, err == nil && av.Known
}
