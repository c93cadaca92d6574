package estimate

import "fmt"

// SamplerKeep is whether the sampler (its KV pool, its decode workspaces
// and graphs) may stay allocated while the policy trains, so that the
// next step's rollouts reuse it instead of allocating the pool and
// capturing every batch-size bucket's graph again (rollout.KeptEngine).
type SamplerKeep struct {
	Keep bool
	// Bytes is what the policy update holds with the sampler kept: the
	// resident items, the training phase and the kept sampler — the
	// largest KV plan's pool and decode workspaces (KVPlan.Bytes and
	// DecodeBytes; sampling or eval, whose calls share the sampler).
	Bytes int64
	// Why is the decision in one line, for the run's log.
	Why string
}

// KeepSampler decides SamplerKeep from the estimate and the free memory
// av it was planned against (the KV plans are cut to it): the sampler is
// kept when Bytes fit in av less the KV plan's headroom. Unknown free
// memory keeps it, as the KV pool is then left unbounded too. The
// sampling phase's transient activations are not counted: they are freed
// before the update.
func (e *Estimate) KeepSampler(av *Available) SamplerKeep {
	var kept, pool int64
	for _, p := range e.KV {
		if b := p.Bytes() + p.DecodeBytes; b > kept {
			kept, pool = b, p.Bytes()
		}
	}
	resident, training := e.PhaseBytes(PhaseResident), e.PhaseBytes(PhaseTraining)
	k := SamplerKeep{Bytes: resident + training + kept}
	what := fmt.Sprintf("resident %s + training %s + the sampler's KV pool %s and decode workspaces %s = %s",
		FormatBytes(resident), FormatBytes(training), FormatBytes(pool), FormatBytes(kept-pool), FormatBytes(k.Bytes))
	if av == nil || !av.Known {
		k.Keep = true
		k.Why = fmt.Sprintf("kept across steps: free memory unknown; %s", what)
		return k
	}
	room := int64(float64(av.Bytes) * (1 - kvHeadroom))
	k.Keep = k.Bytes <= room
	if k.Keep {
		k.Why = fmt.Sprintf("kept across steps: %s fit in %s of %s free", what, FormatBytes(room), FormatBytes(av.Bytes))
	} else {
		k.Why = fmt.Sprintf("freed before each policy update and rebuilt (graphs recaptured) at the next step: %s exceed %s of %s free", what, FormatBytes(room), FormatBytes(av.Bytes))
	}
	return k
}
