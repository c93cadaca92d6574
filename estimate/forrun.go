package estimate

import (
	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// ForRun is the memory estimate of a run whose model is loaded on be,
// against the free memory the trainer plans its KV pool for, and that
// memory; nil when either is unknown. train are the run's [[env]] shapes
// (TrainShapes, probed with ProbeEnv). before is the free memory read
// before the weights loaded (recompute = "auto" reads it); without it,
// what is free now, with the estimate's resident items (the weights,
// adapter and optimizer, loaded by now) added back. ep prices one rank of
// an expert-parallel run (Options.ExpertParallel; 1: the whole model).
func ForRun(cfg *config.Config, mc *model.Config, be kernels.Backend, train []EnvShape, before *Available, ep int) (*Estimate, *Available) {
	opts := Options{Device: be.Name(), Train: train, ExpertParallel: ep}
	av := before
	if av == nil || !av.Known {
		free, ok := FreeMemory(be)
		if !ok {
			return nil, nil
		}
		e, err := Memory(cfg, mc, opts)
		if err != nil {
			return nil, nil
		}
		av = &Available{Bytes: free + e.PhaseBytes(PhaseResident), Known: true}
	}
	opts.Available = av
	e, err := Memory(cfg, mc, opts)
	if err != nil {
		return nil, nil
	}
	return e, av
}

// FreeMemory is be's free memory now: the backend's own report on a GPU,
// the host's MemAvailable otherwise.
func FreeMemory(be kernels.Backend) (int64, bool) {
	if mr, ok := be.(kernels.MemoryReporter); ok && be.Describe().GPU {
		free, _, err := mr.MemInfo()
		return free, err == nil
	}
	av, err := AvailableMemory(be.Name())
	return av.Bytes, err == nil && av.Known
}
