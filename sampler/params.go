package sampler

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Params control how one sequence is sampled: the per-row transforms of
// the Sample op (kernels.SampleParams, embedded) and what ends a turn. The
// run config's [sampling] section embeds Params, so the toml tags are its
// keys; fields tagged "-" are set by the code, not by a config. The zero
// value is not valid: start from DefaultParams.
type Params struct {
	// MaxTokens caps the tokens the model generates in one turn (one Run),
	// as Prime/verifiers' per-turn max_tokens; 0 means no per-turn cap. The
	// sampler's MaxLen caps a sequence's total length in every case.
	MaxTokens int `toml:"max_tokens"`
	// SampleParams are temperature, top_p, top_k and min_p: temperature 0
	// is greedy (argmax, ties to the lowest id, no randomness); top_p keeps
	// the smallest set of most likely tokens whose probability sums to at
	// least top_p (ties broken by lower id first), 1 disables it; top_k
	// keeps the top_k most likely tokens (ties to lower ids), 0 or -1
	// disables it; min_p drops tokens whose probability is below min_p
	// times the most likely token's, 0 disables it.
	kernels.SampleParams
	// StopTokens end a turn when sampled; the stop token is kept (it is part
	// of what the model generated). Use StopTokenIDs for a tokenizer's set.
	StopTokens []int32 `toml:"-"`
	// Stop strings end a turn as soon as the decoded text of the turn
	// contains one; the tokens are kept up to and including the one that
	// completed the string.
	Stop []string `toml:"stop"`
	// Seed seeds this sequence's own random stream, so its tokens do not
	// depend on which other sequences share the batch.
	Seed uint64 `toml:"-"`
	// TopLogprobs, when above 0, keeps that many most likely alternatives
	// of each sampled token in Turn.TopLogprobs (an API's top_logprobs).
	TopLogprobs int `toml:"-"`
}

// DefaultParams samples from the model's distribution unchanged
// (temperature 1, no truncation) with no length cap besides the cache.
func DefaultParams() Params {
	return Params{SampleParams: kernels.SampleParams{Temperature: 1, TopP: 1}}
}

// Validate reports the first invalid parameter as "key = value: problem"
// or "stop[i] ...": the Sample op's knobs through kernels.SampleParams'
// Validate (a *kernels.ParamError), then the turn's own.
func (p *Params) Validate() error {
	if err := p.SampleParams.Validate(); err != nil {
		return err
	}
	if p.MaxTokens < 0 {
		return &kernels.ParamError{Key: "max_tokens", Value: p.MaxTokens, Want: "must be a count ≥ 1, or 0 for no per-turn cap"}
	}
	if p.TopLogprobs < 0 || p.TopLogprobs > MaxTopLogprobs {
		return &kernels.ParamError{Key: "top_logprobs", Value: p.TopLogprobs, Want: fmt.Sprintf("must be in [0, %d]", MaxTopLogprobs)}
	}
	for i, s := range p.Stop {
		if s == "" {
			return fmt.Errorf("stop[%d] is empty: a stop string needs at least one character; remove it", i)
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
