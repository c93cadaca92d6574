package trainer

import (
	"fmt"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/model"
)

// readFreeMemory keeps, for recompute = "auto", the device's free memory
// as it is before the weights load: the estimate counts the weights among
// its resident items, so the memory it is held to must still include them.
func (r *run) readFreeMemory() error {
	if r.cfg.Recompute != config.RecomputeAuto {
		return nil
	}
	av, err := estimate.AvailableMemory(r.be.Name())
	if err != nil {
		return err
	}
	r.freeMemory = &av
	return nil
}

// chooseRecompute sets the base model's activation-memory policy (so the
// policy model and the KL reference share it): the config's, or for "auto"
// the one the run's memory estimate picks — the model's shape, the
// training envs' prompts rendered with the model's tokenizer, and the free
// memory readFreeMemory read.
func (r *run) chooseRecompute() error {
	why := "set in the config"
	if r.cfg.Recompute == config.RecomputeAuto {
		e, err := estimate.Memory(r.cfg, r.base.Config, estimate.Options{Device: r.be.Name(), Train: r.trainShapes(), Available: r.freeMemory, ExpertParallel: r.layout.EP})
		if err != nil {
			return fmt.Errorf("recompute = %q: %w", r.cfg.Recompute, err)
		}
		r.base.Recompute, r.base.CheckpointLayers, why = e.Recompute, e.CheckpointLayers, e.RecomputeWhy
	} else {
		p, k, err := model.ParseRecomputeSetting(r.cfg.Recompute)
		if err != nil {
			return config.CheckRecompute(r.cfg.Recompute)
		}
		r.base.Recompute, r.base.CheckpointLayers = p, k
	}
	r.dir.Logf("recompute = %s (%s)", model.RecomputeSetting(r.base.Recompute, r.base.CheckpointLayers), why)
	return nil
}
