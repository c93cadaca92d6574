package update

// Metrics are the step's numbers under the names metrics.jsonl uses
// (prime-rl's where it has them): the loss and its parts, the optimizer
// step, the advantages, and what the filters left out.
func (st Stats) Metrics() map[string]float64 {
	ls, adv := st.Loss, st.Advantages
	m := map[string]float64{
		"loss": ls.Loss, "grad_norm": st.Optimizer.GradNorm, "lr": st.Optimizer.LR, "kl": ls.KL, "entropy": ls.Entropy,
		"clip_ratio/low": ls.ClipLow, "clip_ratio/high": ls.ClipHigh, "clip_ratio/region": ls.ClipRegion,
		"frac_reward_zero_std": adv.FracZeroStd, "advantage/mean": adv.Mean, "advantage/std": adv.Std,
		"advantage/min": adv.Min, "advantage/max": adv.Max, "tokens/trained": float64(ls.Tokens),
	}
	// The sampler/trainer mismatch (prime-rl's mismatch_kl), the share of
	// tokens whose behaviour correction was truncated or masked, and what
	// the zero-advantage filter left out before the forward.
	m["mismatch_kl"] = ls.MismatchKL
	m["is_clip_ratio/low"], m["is_clip_ratio/high"], m["is_clip_ratio/region"] = ls.ISLow, ls.ISHigh, ls.ISLow+ls.ISHigh
	m["filter/zero_advantage_groups"], m["filter/zero_advantage_rollouts"] = float64(ls.FilteredGroups), float64(ls.FilteredSamples)
	if ls.AuxLoss != 0 {
		m["aux_loss"] = ls.AuxLoss // the routers' load-balancing loss, without its coefficient
	}
	if ls.RoutingReplayed > 0 {
		// Mixture of experts with routing replay: the share of the tokens
		// whose recomputed top-k differs from the sampled routing.
		m["routing/mismatch"], m["routing/replayed_tokens"] = ls.RoutingMismatch, float64(ls.RoutingReplayed)
	}
	return m
}
