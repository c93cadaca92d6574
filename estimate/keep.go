package estimate

import "fmt"

// SamplerKeep is whether the sampler (its KV pool, its decode workspaces
// and graphs) may stay allocated while the policy trains, so that the
// next step's rollouts reuse it instead of allocating the pool and
// capturing every batch-size bucket's graph again (rollout.KeptEngine).
type SamplerKeep struct {
	Keep bool
	// Bytes is what a step holds at once when it keeps the sampler: the
	// resident items, the largest sampling phase (sampling or eval: KV
	// pool, forward activations, logits) and the training phase. The
	// sampling phase stands for what the sampler keeps: its pool, exactly,
	// and its decode workspaces, which the estimate does not itemise (each
	// bucket's rows of activations and logits: about twice the slots'
	// rows for the padded buckets, more with exact-size ones), so with a
	// large vocabulary a tight fit can be optimistic.
	Bytes int64
	// Why is the decision in one line, for the run's log.
	Why string
}

// KeepSampler decides SamplerKeep from the estimate's phases and the free
// memory av (as planned against: the KV plans are cut to it): the sampler
// is kept when resident + sampling + training fit in av less the KV plan's
// headroom. Unknown free memory keeps it, as the KV pool is then left
// unbounded too.
func (e *Estimate) KeepSampler(av *Available) SamplerKeep {
	sampling := max(e.PhaseBytes(PhaseSampling), e.PhaseBytes(PhaseEval))
	k := SamplerKeep{Bytes: e.PhaseBytes(PhaseResident) + sampling + e.PhaseBytes(PhaseTraining)}
	if av == nil || !av.Known {
		k.Keep = true
		k.Why = fmt.Sprintf("kept across steps: free memory unknown; sampling %s and training %s together need %s", FormatBytes(sampling), FormatBytes(e.PhaseBytes(PhaseTraining)), FormatBytes(k.Bytes))
		return k
	}
	room := int64(float64(av.Bytes) * (1 - kvHeadroom))
	k.Keep = k.Bytes <= room
	what := fmt.Sprintf("resident %s + sampling %s + training %s = %s", FormatBytes(e.PhaseBytes(PhaseResident)), FormatBytes(sampling), FormatBytes(e.PhaseBytes(PhaseTraining)), FormatBytes(k.Bytes))
	if k.Keep {
		k.Why = fmt.Sprintf("kept across steps: %s fit in %s of %s free", what, FormatBytes(room), FormatBytes(av.Bytes))
	} else {
		k.Why = fmt.Sprintf("freed before each policy update and rebuilt (graphs recaptured) at the next step: %s exceed %s of %s free", what, FormatBytes(room), FormatBytes(av.Bytes))
	}
	return k
}
