package rollout

import (
	"context"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// KeptEngine is Local over a model whose sampler outlives a Play: a
// GRPO run calls Play every step and every eval, and a new sampler each
// time allocates the KV pool again and, on a backend with graphs, runs
// two eager decode steps and a capture for every batch-size bucket the
// live count passes through. KeptEngine reuses its sampler when the next
// Play fits it (sampler.Fits: slots, sequence length, blocks) and builds
// one large enough for both otherwise; the trajectories are those of
// Local with the same arguments, bit for bit. Release frees the sampler
// between Plays (a trainer whose KV pool and training activations do not
// fit in memory together); the next Play builds it afresh.
type KeptEngine struct {
	Model *model.Model
	Tok   *tokenizer.Tokenizer
	s     *sampler.Sampler
	// reserve is the least a sampler is built for (Reserve).
	reserve sampler.Config
	// builds counts the samplers made.
	builds int
}

// Reserve makes every sampler the engine builds hold at least cfg's
// slots, sequence length and blocks (0: as the call needs), so that calls
// whose sizes vary within cfg — a step's longest prompt changes from
// step to step — reuse one sampler: a trainer reserves its memory plan's
// KV pool (estimate.KVPlan).
func (k *KeptEngine) Reserve(cfg sampler.Config) { k.reserve = cfg }

// NewKeptEngine returns an engine over m that keeps its sampler across
// Plays until Release or Close.
func NewKeptEngine(m *model.Model, tok *tokenizer.Tokenizer) *KeptEngine {
	return &KeptEngine{Model: m, Tok: tok}
}

// Play is Local on the kept sampler. A Play that fails leaves no sampler
// kept: its sequences may still hold slots.
func (k *KeptEngine) Play(ctx context.Context, e env.Environment, exs []env.Example, perExample int, p sampler.Params, seed uint64, opts Options) ([]Trajectory, error) {
	c, err := sizeLocal(k.Model, k.Tok, e, exs, perExample, p, opts)
	if err != nil {
		return nil, err
	}
	s, err := k.sampler(c.cfg)
	if err != nil {
		return nil, err
	}
	trajs, err := c.play(ctx, s, k.Tok, e, exs, perExample, p, seed, opts)
	if err != nil {
		k.Release()
	}
	return trajs, err
}

// sampler is the kept sampler made ready for cfg, or a new one sized for
// both cfg and what the kept one held, so that alternating calls (a step,
// then an eval of another size) settle on one sampler.
func (k *KeptEngine) sampler(cfg sampler.Config) (*sampler.Sampler, error) {
	if k.s != nil && k.s.Fits(cfg) {
		if err := k.s.Reuse(k.Tok, cfg); err == nil {
			return k.s, nil
		}
	}
	want := cfg
	grow := func(slots, maxLen, blocks int) {
		want.Slots, want.MaxLen = max(want.Slots, slots), max(want.MaxLen, maxLen)
		if want.Blocks > 0 {
			want.Blocks = max(want.Blocks, blocks) // 0 is every slot's worst case already
		}
	}
	r := k.reserve
	grow(r.Slots, r.MaxLen, r.Blocks)
	if r.Slots > 0 && r.MaxLen > 0 && r.Blocks == 0 {
		want.Blocks = 0 // the reserved pool is every slot's worst case
	}
	if k.s != nil {
		c := k.s.Capacity() // the cache less its padding slot and block, which New adds again
		grow(c.Slots, c.MaxLen, c.Blocks)
	}
	want.PrefillTokens = 0
	k.Release()
	s, err := sampler.New(k.Model, k.Tok, want)
	if err != nil {
		return nil, err
	}
	if err := s.Reuse(k.Tok, cfg); err != nil {
		s.Close()
		return nil, err
	}
	k.s = s
	k.builds++
	return s, nil
}

// Release frees the kept sampler (its KV pool and decode graphs) now.
func (k *KeptEngine) Release() {
	if k.s != nil {
		k.s.Close()
		k.s = nil
	}
}

// Kept reports whether a sampler is held between Plays.
func (k *KeptEngine) Kept() bool { return k.s != nil }

// Builds is how many samplers the engine has made.
func (k *KeptEngine) Builds() int { return k.builds }

// SetPolicy does nothing: the model shares the adapter's buffers, which
// the optimiser updates in place, and the decode graphs read them there.
func (*KeptEngine) SetPolicy(context.Context, int, *lora.Adapter) error { return nil }

// Close releases the sampler.
func (k *KeptEngine) Close(context.Context) error {
	k.Release()
	return nil
}
