package sampler

import (
	"fmt"
	"math"
)

// Params control how one sequence is sampled. The zero value is not valid:
// start from DefaultParams.
type Params struct {
	// Temperature divides the logits before sampling; 0 means greedy
	// (argmax, ties to the lowest id, no randomness).
	Temperature float64
	// TopP keeps the smallest set of most likely tokens whose probability
	// sums to at least TopP (ties broken by lower id first); 1 disables it.
	TopP float64
	// TopK keeps the TopK most likely tokens (ties to lower ids); 0 or -1
	// disables it.
	TopK int
	// MinP drops tokens whose probability is below MinP times the most
	// likely token's; 0 disables it.
	MinP float64
	// MaxTokens caps the tokens the model generates in one turn (one Run),
	// as Prime/verifiers' per-turn max_tokens; 0 means no per-turn cap. The
	// sampler's MaxLen caps a sequence's total length in every case.
	MaxTokens int
	// StopTokens end a turn when sampled; the stop token is kept (it is part
	// of what the model generated). Use StopTokenIDs for a tokenizer's set.
	StopTokens []int32
	// Stop strings end a turn as soon as the decoded text of the turn
	// contains one; the tokens are kept up to and including the one that
	// completed the string.
	Stop []string
	// Seed seeds this sequence's own random stream, so its tokens do not
	// depend on which other sequences share the batch.
	Seed uint64
}

// DefaultParams samples from the model's distribution unchanged
// (temperature 1, no truncation) with no length cap besides the cache.
func DefaultParams() Params {
	return Params{Temperature: 1, TopP: 1}
}

// Validate reports the first invalid parameter as "key = value: problem".
func (p *Params) Validate() error {
	switch {
	case !(p.Temperature >= 0) || math.IsInf(p.Temperature, 0):
		return fmt.Errorf("temperature = %v: want a finite value ≥ 0 (0 is greedy)", p.Temperature)
	case !(p.TopP > 0 && p.TopP <= 1):
		return fmt.Errorf("top_p = %v: want a value in (0, 1] (1 disables it)", p.TopP)
	case p.TopK < -1:
		return fmt.Errorf("top_k = %d: want a positive count, or 0 or -1 to disable it", p.TopK)
	case !(p.MinP >= 0 && p.MinP <= 1):
		return fmt.Errorf("min_p = %v: want a value in [0, 1] (0 disables it)", p.MinP)
	case p.MaxTokens < 0:
		return fmt.Errorf("max_tokens = %d: want a positive count, or 0 for no per-turn cap", p.MaxTokens)
	}
	for i, s := range p.Stop {
		if s == "" {
			return fmt.Errorf("stop[%d] is empty: a stop string needs at least one character", i)
		}
	}
	return nil
}

// DeriveSeed mixes a base seed with keys (e.g. example and rollout index)
// into a per-sequence seed with SplitMix64, so that neighbouring keys get
// unrelated streams.
func DeriveSeed(seed uint64, keys ...uint64) uint64 {
	h := splitmix(seed)
	for _, k := range keys {
		h = splitmix(h ^ splitmix(k+0x632be59bd9b4e019))
	}
	return h
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
