package loss

import (
	"fmt"
	"slices"

	"github.com/grpo-dev/grpo/model"
)

// Stats are the policy update's metrics, averaged over trained tokens.
// KL is measured only when the penalty is on (Beta > 0): it needs a second
// forward pass through the base model.
type Stats struct {
	Loss                          float64
	Tokens                        int // trained (unmasked) completion tokens
	Entropy, KL                   float64
	ClipLow, ClipHigh, ClipRegion float64 // fractions of trained tokens (DPPO: masked)
	// MismatchKL is the mean k3 estimate of KL between the sampler's and
	// the trainer's token distributions, exp(Δ) − Δ − 1 with Δ the
	// trainer's minus the sampler's log-prob (prime-rl's mismatch_kl);
	// ISLow and ISHigh are the fractions of trained tokens whose
	// behaviour correction was truncated or masked below and above.
	MismatchKL    float64
	ISLow, ISHigh float64
	// FilteredGroups and FilteredSamples count what the zero-advantage
	// filter dropped before the forward (set by the update, not here).
	FilteredGroups, FilteredSamples int
	// RoutingReplayed counts the tokens whose forward replayed a recorded
	// expert routing (Config.RoutingReplay, mixture-of-experts models),
	// and RoutingMismatch is the fraction of them whose recomputed top-k
	// differs from the recorded one in some layer.
	RoutingReplayed int
	RoutingMismatch float64
	// AuxLoss is, when the policy's routers are adapted and the model's
	// router_aux_loss_coef is positive, the load-balancing loss (HF's
	// load_balancing_loss_func over each micro-batch, averaged over the
	// micro-batches weighted by their tokens); Loss includes
	// router_aux_loss_coef × AuxLoss.
	AuxLoss float64
}

// PolicyGradient computes the GRPO policy loss of samples under policy (a
// model with its LoRA adapter attached) and adds the gradient of the loss
// into the adapter's gradient buffers. Samples are processed in
// micro-batches of at most microTokens tokens; the per-token weights are
// computed over the whole batch first, so the accumulated gradient equals
// that of one big batch. maxTokens is [sampling] max_tokens (dr_grpo's
// normaliser). With cfg.Beta > 0 the KL reference is policy with its
// adapter switched off. A policy whose routers are adapted also takes the
// gradient of router_aux_loss_coef × the load-balancing loss.
func PolicyGradient(policy *model.Model, samples []Sample, cfg Config, maxTokens, microTokens int) (Stats, error) {
	return PolicyGradientOfShare(policy, samples, CountBatch(samples, cfg), cfg, maxTokens, microTokens)
}

// Batch is what a step's normalisers count over the whole batch: its
// samples, its trained completion tokens and the tokens its forward
// passes read (the routers' load-balancing loss weighs each micro-batch
// by its share of these).
type Batch struct {
	Samples, Tokens, SeqTokens int
}

// CountBatch counts samples as the loss's normalisers do.
func CountBatch(samples []Sample, cfg Config) Batch {
	b := Batch{Samples: len(samples)}
	for i := range samples {
		for j := range samples[i].Completion {
			if samples[i].trained(j, cfg) {
				b.Tokens++
			}
		}
		b.SeqTokens += samples[i].SeqLen()
	}
	return b
}

// PolicyGradientOfShare is PolicyGradient for samples that are one
// device's share of a data-parallel step whose whole batch counts whole:
// every token's weight is normalised by the whole batch (its token or
// sample count, as cfg.Type says), so the devices' gradients, and their
// losses, sum to the whole batch's. Stats.Tokens and the averages
// (entropy, KL, clip and mismatch fractions) are over the share's own
// trained tokens, for the caller to weigh.
func PolicyGradientOfShare(policy *model.Model, samples []Sample, whole Batch, cfg Config, maxTokens, microTokens int) (Stats, error) {
	return PolicyGradientPadded(policy, samples, whole, cfg, maxTokens, microTokens, 0)
}

// PolicyGradientPadded is PolicyGradientOfShare that runs passes forward
// and backward passes in all when its share takes fewer (Passes): after
// its own, idle ones (idlePass). Expert-parallel ranks pad to the most
// any of them takes: each pass's sparse layers exchange rows among all
// the ranks, and a rank with nothing left to train still runs its
// experts on the others' rows.
func PolicyGradientPadded(policy *model.Model, samples []Sample, whole Batch, cfg Config, maxTokens, microTokens, passes int) (Stats, error) {
	var st Stats
	for i, s := range samples {
		if len(s.Prompt) == 0 || len(s.Completion) == 0 {
			return st, fmt.Errorf("sample %d: empty prompt or completion", i)
		}
		if len(s.OldLogp) != len(s.Completion) || (s.ModelMask != nil && len(s.ModelMask) != len(s.Completion)) {
			return st, fmt.Errorf("sample %d: %d completion tokens but %d old log-probs and %d mask entries", i, len(s.Completion), len(s.OldLogp), len(s.ModelMask))
		}
	}
	weights, total := tokenWeights(samples, whole, cfg, maxTokens)
	st.Tokens = total
	if total == 0 {
		return st, idlePasses(policy, cfg, passes)
	}
	trained := 0
	for _, ws := range weights {
		for _, w := range ws {
			if w != 0 {
				trained++
			}
		}
	}
	if trained == 0 {
		st.Tokens = 0
		return st, idlePasses(policy, cfg, passes) // nothing carries loss: no forward of its own to run
	}
	stats := newStepStats(policy.Backend, trained, cfg.Beta != 0)
	defer stats.free()
	var sums lossSums
	if coef := policy.Config.RouterAuxLossCoef; coef > 0 && policy.TrainsRouter() {
		sums.auxCoef = coef
		sums.auxTokens = whole.SeqTokens
	}
	mbs := microBatches(samples, weights, sums.sharePrompts(), microTokens)
	for _, mb := range mbs {
		if err := policyMicroBatch(policy, samples[mb[0]:mb[1]], weights[mb[0]:mb[1]], cfg, &sums, stats); err != nil {
			return st, err
		}
	}
	if err := idlePasses(policy, cfg, passes-len(mbs)); err != nil {
		return st, err
	}
	// The step's metrics come back once, after its last micro-batch.
	if err := stats.read(&sums); err != nil {
		return st, err
	}
	st.Loss = sums.loss + sums.auxCoef*sums.aux
	st.AuxLoss = sums.aux
	t := float64(total)
	st.Entropy, st.KL = sums.entropy/t, sums.kl/t
	st.ClipLow, st.ClipHigh = float64(sums.clipLow)/t, float64(sums.clipHigh)/t
	st.ClipRegion = float64(sums.clipLow+sums.clipHigh) / t
	st.MismatchKL = sums.mismatch / t
	st.ISLow, st.ISHigh = float64(sums.isLow)/t, float64(sums.isHigh)/t
	if sums.replayed > 0 {
		st.RoutingReplayed, st.RoutingMismatch = sums.replayed, sums.flipped/float64(sums.replayed)
	}
	return st, nil
}

// microBatches cuts samples into the micro-batches PolicyGradientOfShare
// runs, as [lo, hi) ranges: consecutive samples of at most microTokens
// forward tokens (one sample at least), leaving out those with no token
// of non-zero weight, which run no forward.
func microBatches(samples []Sample, weights [][]float32, share bool, microTokens int) [][2]int {
	var out [][2]int
	for lo := 0; lo < len(samples); {
		hi, n := lo, 0
		for hi < len(samples) && (hi == lo || n+forwardLen(samples, lo, hi, share) <= microTokens) {
			n += forwardLen(samples, lo, hi, share)
			hi++
		}
		if weighted(weights[lo:hi]) {
			out = append(out, [2]int{lo, hi})
		}
		lo = hi
	}
	return out
}

func weighted(weights [][]float32) bool {
	for _, ws := range weights {
		for _, w := range ws {
			if w != 0 {
				return true
			}
		}
	}
	return false
}

// Passes is how many forward and backward passes PolicyGradientOfShare
// runs over samples under policy. Expert-parallel ranks check that theirs
// agree before a step: each pass's sparse layers exchange rows among all
// the ranks, so every rank must run as many.
func Passes(policy *model.Model, samples []Sample, whole Batch, cfg Config, maxTokens, microTokens int) int {
	weights, _ := tokenWeights(samples, whole, cfg, maxTokens)
	share := policy.Config.RouterAuxLossCoef == 0 || !policy.TrainsRouter()
	return len(microBatches(samples, weights, share, microTokens))
}

// forwardLen is the tokens sample i adds to a micro-batch that starts at
// sample lo: a rollout whose prompt an earlier one in it shares runs only
// its last prompt token and its completion (model.Batch.Share) when share
// is set.
func forwardLen(samples []Sample, lo, i int, share bool) int {
	if share && i > lo && slices.Equal(samples[i-1].Prompt, samples[i].Prompt) {
		return len(samples[i].Completion)
	}
	return samples[i].SeqLen()
}
